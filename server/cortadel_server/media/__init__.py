"""Media: documents and images a caller hands over whole (``POST /api/v1/media``, the ``add_media`` tool).

    documents.py  plain text, Markdown, HTML and PDF to passages, each with its page and offset
    captions.py   the caption of an image, written by a vision model when one is configured
    ingest.py     limits and types, then each passage (or caption) through the write pipeline
"""
