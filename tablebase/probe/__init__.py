"""Probing a generated database: :class:`.database.Tablebase`, opened by
:func:`tablebase.open`, reading the slice files a block at a time (:mod:`.blocks`) through
a bounded cache (:mod:`.cache`)."""
