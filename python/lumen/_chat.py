"""lumen.models.Llama with chat(): the compiled model (the C++ class) plus the
file it was loaded from, whose tokenizer and chat template chat() loads on
first use (lumen.models.ChatSession)."""
import os

from ._lumen import models as _models


class Llama(_models.Llama):
    __doc__ = _models.Llama.__doc__

    def __init__(self, path, *args, **kwargs):
        path = os.fspath(path) if isinstance(path, os.PathLike) else path
        super().__init__(path, *args, **kwargs)
        self.path = path
        self._chat_session = None

    def chat(self, messages, max_new_tokens=256, temperature=0.0, top_k=0, top_p=1.0, seed=0):
        """The assistant's reply to messages ([{"role": ..., "content": ...}, ...]): (text, stats).

        Each call is a fresh sequence: the whole conversation is rendered with
        the model's chat template and prefilled; generation stops at the
        template's end-of-turn token (stats["stop_reason"] == "end_of_turn")
        or after max_new_tokens ("length")."""
        if self._chat_session is None:
            self._chat_session = _models.ChatSession(self, self.path)
        return self._chat_session.respond(messages, max_new_tokens, temperature, top_k, top_p, seed)


def _install():
    _models.Llama = Llama
