"""Developer tools for gradloom (not part of the installed package)."""
