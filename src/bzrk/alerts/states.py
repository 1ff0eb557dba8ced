"""The alert state machine: ``ok → pending → firing → resolved``, with hysteresis and mutes.

A pure function of the alert's stored state, one evaluation's verdict and the clock, so it is
tested without a server and every surface agrees on it:

* the condition holds: ``ok``/``resolved`` become ``pending`` (or ``firing`` at once when
  ``for`` is 0); ``pending`` becomes ``firing`` once the condition has held for ``for``;
* it does not hold: ``firing`` becomes ``resolved``, ``pending`` falls back to ``ok``;
* an undecided evaluation (an error, a partial answer) changes nothing.

Notifications are de-duplicated against ``notified_state``, what the connections were last
told: ``firing`` is sent once per firing (again every ``repeat`` while it lasts, if set), and
``resolved`` only for a firing that was sent. A mute holds back ``firing`` (and repeats); when
the mute ends while the alert still fires, the held-back ``firing`` goes out then. A
``resolved`` is sent muted or not, so a receiver never keeps an incident open that bzrk closed.

>>> s = Stored("ok", 0.0, None, None, None)
>>> step(s, True, 10.0, for_s=0, repeat_s=None, muted=False).notify
'firing'
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stored:
    state: str  # ok | pending | firing | resolved
    state_since: float
    pending_since: float | None
    notified_state: str | None  # firing | resolved | None
    last_notified_at: float | None


@dataclass(frozen=True, slots=True)
class Step:
    state: str
    state_since: float
    pending_since: float | None
    notified_state: str | None
    last_notified_at: float | None
    notify: str | None  # firing | resolved | None: what to send now
    held_back: bool = False  # a firing not sent because the alert is muted

    def columns(self) -> dict[str, object]:
        return {
            "state": self.state,
            "state_since": self.state_since,
            "pending_since": self.pending_since,
            "notified_state": self.notified_state,
            "last_notified_at": self.last_notified_at,
        }


def step(
    stored: Stored,
    holds: bool | None,
    now: float,
    *,
    for_s: float,
    repeat_s: float | None,
    muted: bool,
) -> Step:
    state, since, pending = stored.state, stored.state_since, stored.pending_since
    if holds is True:
        if state in ("ok", "resolved"):
            if for_s > 0:
                state, since, pending = "pending", now, now
            else:
                state, since, pending = "firing", now, None
        elif state == "pending" and now - (pending if pending is not None else now) >= for_s:
            state, since, pending = "firing", now, None
    elif holds is False:
        if state == "firing":
            state, since = "resolved", now
        elif state == "pending":
            state, since, pending = "ok", now, None
    notified, last = stored.notified_state, stored.last_notified_at
    notify: str | None = None
    held_back = False
    if state == "firing":
        repeat_due = (
            notified == "firing"
            and repeat_s is not None
            and last is not None
            and now - last >= repeat_s
        )
        if notified != "firing" or repeat_due:
            if muted:
                held_back = True
            else:
                notify = "firing"
    elif state in ("resolved", "ok") and notified == "firing":
        notify = "resolved"
    if notify is not None:
        notified, last = notify, now
    return Step(state, since, pending, notified, last, notify, held_back)
