"""Modal screens: help, request detail, export."""

from .export import ExportScreen
from .help import HelpScreen
from .request_detail import RequestDetailScreen

__all__ = ["ExportScreen", "HelpScreen", "RequestDetailScreen"]
