"""One module per CLI verb; each is imported only when its command runs."""
