"""What a forget would take, named, found without changing anything: the plan the inspector shows
before it forgets. It lives with the cascade (:mod:`cogitator_memory.cascade.plan`), so that the
inspector and the CLI (``forget --dry-run`` and its real run, which needs no ``[server]`` extra)
show the same plan from one function.
"""

from __future__ import annotations

from ...cascade.plan import forget_plan

__all__ = ["forget_plan"]
