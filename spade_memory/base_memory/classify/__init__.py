"""The category of a memory guessed offline (``classifier``), trained on the labelled
memories shipped beside it.
"""
