"""Model providers: the offline mock and scripted models, and (issue 2) the real ones."""
