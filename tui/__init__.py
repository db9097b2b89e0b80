"""perftriage's Textual app. Displays analysis results; no analysis logic lives here."""
