"""The pure mechanism core of sowsched: no I/O, no clock, no network; time is always passed in."""
