"""A test plugin (loaded through EVALKIT_PLUGINS): a node that takes time and logs each execution.

Used by the kill-and-resume test, which needs a run slow enough to be killed half-way
in a real subprocess, and a record of which queries really ran.
"""
from __future__ import annotations

import time
from pathlib import Path

from evalkit.graph import Node, NodeParams, register_node
from evalkit.graph.schema import declare_field

declare_field("slow_done", bool, "the test's slow node ran")


class SlowParams(NodeParams):
    seconds: float = 0.1
    log: str = ""  # a file that gets one line per execution: the query id


@register_node
class Slow(Node):
    type = "test_slow"
    reads = ("query_id",)
    writes = ("slow_done",)
    Params = SlowParams

    def run(self, state):
        time.sleep(self.params.seconds)
        if self.params.log:
            with open(Path(self.params.log), "a", encoding="utf-8") as fh:
                fh.write(state["query_id"] + "\n")
        return {"slow_done": True}
