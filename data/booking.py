"""Appointment booking for a small clinic: slots, bookings and reminders.

Sample code for notebook 07 (structure-aware chunking): it is chunked, never imported.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from functools import lru_cache

SLOT_MINUTES = 20
OPENING_HOUR, CLOSING_HOUR = 8, 18


@dataclass(frozen=True)
class Slot:
    """One bookable period in a room."""

    room: str
    start: dt.datetime

    @property
    def end(self) -> dt.datetime:
        return self.start + dt.timedelta(minutes=SLOT_MINUTES)


@dataclass
class Booking:
    patient_id: str
    slot: Slot
    reason: str = ""
    reminders_sent: list[dt.datetime] = field(default_factory=list)


class DoubleBookingError(ValueError):
    """The slot is already taken."""


class Calendar:
    """All bookings of one clinic, looked up by slot."""

    def __init__(self, rooms: list[str]):
        if not rooms:
            raise ValueError("rooms is empty; a clinic needs at least one room")
        self.rooms = list(rooms)
        self._bookings: dict[Slot, Booking] = {}

    def free_slots(self, day: dt.date) -> list[Slot]:
        """Every slot of `day` in every room that nobody has booked, in time order."""
        return [slot for slot in day_slots(day, tuple(self.rooms)) if slot not in self._bookings]

    def book(self, patient_id: str, slot: Slot, reason: str = "") -> Booking:
        """Book `slot` for a patient; raise DoubleBookingError if it is taken."""
        if slot.room not in self.rooms:
            raise ValueError(f"room {slot.room!r} is not one of {self.rooms}")
        if slot in self._bookings:
            raise DoubleBookingError(f"{slot.room} at {slot.start:%H:%M} is already booked")
        booking = Booking(patient_id, slot, reason)
        self._bookings[slot] = booking
        return booking

    def cancel(self, slot: Slot) -> Booking | None:
        """Free `slot`; return the booking that held it, if any."""
        return self._bookings.pop(slot, None)

    def bookings_for(self, patient_id: str) -> list[Booking]:
        return sorted(
            (b for b in self._bookings.values() if b.patient_id == patient_id),
            key=lambda b: b.slot.start,
        )


@lru_cache(maxsize=64)
def day_slots(day: dt.date, rooms: tuple[str, ...]) -> list[Slot]:
    """All slots between opening and closing time, room by room within each time."""
    first = dt.datetime.combine(day, dt.time(OPENING_HOUR))
    count = (CLOSING_HOUR - OPENING_HOUR) * 60 // SLOT_MINUTES
    times = [first + i * dt.timedelta(minutes=SLOT_MINUTES) for i in range(count)]
    return [Slot(room, start) for start in times for room in rooms]


def due_reminders(calendar: Calendar, now: dt.datetime, hours_before: int = 24) -> list[Booking]:
    """Bookings that start within `hours_before` hours and have had no reminder yet."""
    horizon = now + dt.timedelta(hours=hours_before)
    return [
        booking
        for booking in calendar._bookings.values()
        if now <= booking.slot.start <= horizon and not booking.reminders_sent
    ]


def send_reminders(calendar: Calendar, now: dt.datetime, send) -> int:
    """Call `send(booking)` for each due reminder, record it, and return how many were sent."""
    sent = 0
    for booking in due_reminders(calendar, now):
        send(booking)
        booking.reminders_sent.append(now)
        sent += 1
    return sent


def occupancy(calendar: Calendar, day: dt.date) -> float:
    """Share of the day's slots that are booked (0..1)."""
    slots = day_slots(day, tuple(calendar.rooms))
    return sum(slot in calendar._bookings for slot in slots) / len(slots)
