"""A test plugin (loaded through EVALKIT_PLUGINS): a node that holds a run half-way for as long as a test likes.

After ``free`` executions, each execution waits while the file ``hold`` exists (at most a minute), so
a test can catch a real ``evalkit run`` in the middle of its query loop on a machine of any speed, act
(start a second writer, SIGKILL it), then let it go by deleting the file.
"""
from __future__ import annotations

import time
from pathlib import Path

from evalkit.graph import Node, NodeParams, register_node
from evalkit.graph.schema import declare_field

declare_field("held", bool, "the test's hold node ran")
MAX_WAIT_S = 60.0


class HoldParams(NodeParams):
    hold: str = ""  # while this file exists, executions after the first `free` wait
    free: int = 0


@register_node
class Hold(Node):
    type = "test_hold"
    reads = ("query_id",)
    writes = ("held",)
    Params = HoldParams
    executions = 0

    def run(self, state):
        Hold.executions += 1
        deadline = time.monotonic() + MAX_WAIT_S
        while Hold.executions > self.params.free and Path(self.params.hold).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return {"held": True}
