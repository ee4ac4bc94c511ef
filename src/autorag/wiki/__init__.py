"""Archives: a workspace's markdown wiki (seed 003, "Archivos, Wiki").

An archive holds pages addressed by a path slug (``projects/apollo``); every save keeps
the previous version; ``[[wikilinks]]`` are parsed on save into a links table (outgoing,
backlinks, dangling); pages are chunked and indexed in the same vector and full-text
stores as documents, under the archive's own namespace ``archive:<id>``.
"""
