"""Probing a generated database: :class:`.database.Tablebase`, opened by
:func:`tablebase.open`."""
