"""YouTube videos as documents: their transcripts, timestamps kept (issue 22).

``urls`` (ids, identities, citation links: light, imported by the API's citations and
the CLI's ``add``), ``transcripts`` (youtube-transcript-api, every failure mapped) and
``service`` (the transcript indexed as a document). Nothing is imported here, so that
reading a URL does not load the transcript library or the indexing pipeline.
"""
