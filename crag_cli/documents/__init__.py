"""Documents: a folder's files read into passages (folder walking, document types, PDF and Word, titles, big text)."""
