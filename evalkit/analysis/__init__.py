"""Reading finished runs: comparison reports (later: calibrate, compare, gate)."""
