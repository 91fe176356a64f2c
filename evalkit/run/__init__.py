"""The eval runner: variants x queries, result files, resume."""
