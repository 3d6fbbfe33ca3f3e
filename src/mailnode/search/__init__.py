"""Search over the mail a person may read: the query language, the index, and the search itself (issue 15)."""
