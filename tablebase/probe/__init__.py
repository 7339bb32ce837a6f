"""Probing a generated database: :class:`.database.Tablebase`, opened by
:func:`tablebase.open`, reading the slice files a block at a time (:mod:`.blocks`) through a
bounded cache (:mod:`.cache`) whose blocks each part of a database sees as pages
(:mod:`.pagedpart`) that the compiled look-ups read (:mod:`.pagetable`): a position located
in its slice (:mod:`.locate`), its entry read (:mod:`.lookup`), capture positions resolved
through their captures (:mod:`.captures`), a batch's positions grouped by page
(:mod:`.pagesort`), sparse batches read straight from group-coded blocks (:mod:`.direct`),
the look-ups' named outcomes (:mod:`.status`); the count-aware probe (:mod:`.undercount`)
and the Hub protocol front end (:mod:`.hub`)."""
