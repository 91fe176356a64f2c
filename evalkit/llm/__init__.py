"""LLM backends (openai-compatible, local GGUF, extractive) behind one client with a content-addressed cache."""
