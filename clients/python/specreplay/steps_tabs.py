"""The tabs of a multi-client test: the instances are tabs of one shared web persistence. The
steps a tab maps differently from a client of its own (visibility and the primary lease, its
shutdown, clearing the persistence), and the check of its `tab` state."""
from __future__ import annotations

from .errors import StepFailure
from .steps_common import StepMode


class TabSteps(StepMode):
    def do_step(self, step: dict) -> bool:
        """The steps a tab of a shared persistence maps differently: its visibility, the lease,
        and its shutdown (the tab closes; the persistence stays)."""
        run = self.run
        if "applyClientState" in step:
            cs = step["applyClientState"]
            if cs.get("visibility"):
                run.call("POST", f"{run.cbase}:setVisibility", json={"visible": cs["visibility"] == "visible"})
            if cs.get("primary"):
                run.call("POST", f"{run.cbase}:claimPrimary", json={})
        elif "shutdown" in step:
            run.call("POST", f"{run.cbase}:terminate", json={})
            run.side.shut_down = True
            run.forget_session()
        elif "clearPersistence" in step:
            # From a terminated tab: the other tabs shut down with it.
            run.call("POST", f"{run.cbase}:clearPersistence", json={})
            for side in run.sides.values():
                if not side.shut_down:
                    side.shut_down = True
                    for l in side.listeners.values():
                        l.closing = True
        else:
            return False
        return True

    def check_state(self, es: dict):
        """`isPrimary`, `numActiveClients` and `isShutdown` against the tab's state."""
        run = self.run
        state = run.call("GET", run.cbase).json()
        tab = state.get("tab") if not state.get("terminated") else None
        problems = []
        if "isPrimary" in es and bool(tab and tab["primary"]) != es["isPrimary"]:
            problems.append(f"primary {bool(tab and tab['primary'])} (expected {es['isPrimary']}; primary tab "
                            f"{tab and tab.get('primaryTab')})")
        if "numActiveClients" in es and (tab or {}).get("activeTabs") != es["numActiveClients"]:
            problems.append(f"{(tab or {}).get('activeTabs')} active tabs (expected {es['numActiveClients']})")
        if "isShutdown" in es and bool(state.get("terminated")) != es["isShutdown"]:
            problems.append(f"terminated {state.get('terminated')} (expected {es['isShutdown']})")
        if problems:
            raise StepFailure("; ".join(problems))
