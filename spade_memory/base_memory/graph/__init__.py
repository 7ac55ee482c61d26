"""The entity graph: what memories name (people, places, titles, days, recurring words),
found without a model at store time, linked memory ↔ entity, and followed by search."""
