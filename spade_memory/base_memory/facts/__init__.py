"""Facts that change: what a memory states (its frame), and which stored memory a new one
replaces, found without a model."""
