"""Renderers: LINEAR -> source text. cstyle holds the rules shared by C-family languages."""
