"""Flask-WTF forms (CSRF-protected), one module per area."""
