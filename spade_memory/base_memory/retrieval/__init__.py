"""Retrieval: how the long-term store ranks what a search finds.

``ranking`` (BM25 alone, or fused with dense similarity), ``dense`` and ``ann`` (exact
and approximate vector indexes), ``dates`` (a time named in the question),
``locality`` (neighbours of a strong match), ``embeddings``, ``model_file`` and
``query_encoder`` (the model, offline), ``backfill``, ``meanwhile`` and ``threads``
(vectors computed in the background), ``pgvector`` and ``vector_notices`` (vectors
in PostgreSQL, shared by several agents).
"""
