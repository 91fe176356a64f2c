#!/usr/bin/env python
"""Run graph variants on an eval set: the same command as ``evalkit run``, as a script.

    python runners/eval_runner.py --eval-set eval_sets/demo_kb.jsonl \
        --graph-config graph_configs/hybrid_rrf.yaml --output results/demo_kb_result.json

See ``python runners/eval_runner.py --help`` for every option.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without installing

from evalkit.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.argv[1:1] = ["run"]
    main()
