"""The Tape: recorded launches run backwards, its graph view, and forward mode's tangent
tape."""
