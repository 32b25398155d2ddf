"""The practitioner's tools, kept after the course: `chunk_eval` (the `chunk-eval` command), `readers` (PDF, HTML,
Word and text files with page numbers), `store` (a LanceDB vector store that re-embeds only what changed) and
`batch` (embedding many documents with Dask). They build on `course_lib`, which never imports them.
"""
