"""Draw-rule adjudication of draughts games (PDN replay, draw rules, tablebase rulings)."""
