"""The footer of keys, recomposed only when the keys it shows change.

Textual's Footer queues a recompose of every key for each ``refresh_bindings`` (the app calls it
whenever a list gets rows, so that the footer shows only the keys that act): while results
arrive that was some ten recomposes of a dozen keys, each key's styles applied again, 0.17 s of
the app's CPU on the webserver sample, taken from the analysing child on two cores. Here the
requests coalesce into one, which recomposes only when the (key, label, action, enabled) list
differs from the one shown.
"""

from __future__ import annotations

from textual.widgets import Footer


class KeyFooter(Footer):
    _pending = False
    _shown: tuple | None = None

    def bindings_changed(self, screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._pending:
            self._pending = True
            self.call_after_refresh(self._recompose_if_changed)

    def _keys(self) -> tuple:
        shown = tuple((b.key, b.description, b.action, enabled, tooltip)
                      for (_, b, enabled, tooltip) in self.screen.active_bindings.values() if b.show)
        return shown, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE

    async def _recompose_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        keys = self._keys()
        if keys != self._shown:
            self._shown = keys
            await self.recompose()
