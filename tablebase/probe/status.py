"""What a compiled look-up found, by name: every look-up answers a pair ``(status, x)``.

=====================  ========================================================================
status                 ``x``
=====================  ========================================================================
:data:`FOUND`          the answer: a stored value, a two-bit code or a result (+1 / 0 / -1)
:data:`NOT_OPEN`       the material code of the position's slice, which is not open (or
                       :data:`~tablebase.material.slices.UNCODED`: no slice can hold it)
:data:`BLOCK_MISSING`  where the block that holds the entry lies, as each look-up says (its page,
                       or the entry's address from which the page follows)
:data:`LOCATED`        the entry where the answer is read (a position located, not yet read)
:data:`CAPTURES`       nothing: the side to move must capture, in a slice that leaves capture
                       positions to the prober; resolve it through its captures
                       (:mod:`tablebase.probe.captures`)
=====================  ========================================================================

A pair rather than one number whose negative values mean something (``-3 - page``) so that
no caller works a meaning out by arithmetic: it compares the status with these names and
reads ``x`` as the status says. Inside compiled code the pair costs nothing (it lives in
registers); returned to Python it is a tuple of two integers.

Batches answer an array instead (:func:`tablebase.probe.lookup.gather_results`): results,
with :data:`MUST_CAPTURE` and :data:`CLOSED` where a position has none yet.
"""

from __future__ import annotations

FOUND = 0
NOT_OPEN = 1
BLOCK_MISSING = 2
CAPTURES = 3
LOCATED = 4

# a batch's results (int8): +1 / 0 / -1, or
MUST_CAPTURE = 2  # the position must capture, in a slice leaving captures to the prober
CLOSED = 3  # its slice is not open (or no slice can hold it)
ANSWERED = -1  # a batch's ``need`` (the address of the entry still to read) where answered
