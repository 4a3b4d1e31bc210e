"""The Flask extensions only web requests use: CSRF protection and the login manager.

Kept apart from `extensions` (the database layer) so that commands do not import them.
"""

from __future__ import annotations

from flask_login import LoginManager
from flask_wtf import CSRFProtect

csrf = CSRFProtect()
login_manager = LoginManager()
login_manager.login_view = "auth.login"
login_manager.login_message_category = "info"
