"""Ingest: a runtime transcript message to the stored ``messages`` / ``message_parts`` /
``large_files`` rows (``src/engine.ts`` ``ingestSingle``, ``src/message-content.ts``,
``src/large-file-interceptor.ts``, ``src/large-files.ts``)."""
