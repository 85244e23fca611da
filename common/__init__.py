"""Pieces every app shares; imports no app."""
