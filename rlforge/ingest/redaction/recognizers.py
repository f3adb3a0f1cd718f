"""Model-based person-name recognizers, run after the rules when a user has one installed.

The rules find names from lists and context; a statistical model (a spaCy pipeline,
GLiNER, Presidio) can find names the rules cannot, at a cost in speed. None ships with
rlforge and none is ever downloaded: a recognizer loads a model the user installed (a
spaCy package or path, a local GLiNER directory), or fails with a message that says what
to install.

A recognizer is chosen by the ``[redaction] recognizer`` setting, ``NAME:MODEL`` (e.g.
``spacy:en_core_web_sm``). Recognizers register by name with `register_recognizer`, the
built-ins as plug-ins do (entry-point group ``rlforge.recognizers``). Each returns, for a
batch of texts, the (start, end) spans of person names in each; the `Redactor` replaces
them with ``PERSON`` pseudonyms, never inside a placeholder.
"""

from __future__ import annotations

from typing import Callable, Protocol

from rlforge import plugins
from rlforge.errors import UnknownName, UserError

Spans = list[tuple[int, int]]


class Recognizer(Protocol):
    """Finds person names: for each text, its name spans (start, end), in any order."""

    def find(self, texts: list[str]) -> list[Spans]: ...


Factory = Callable[[str], Recognizer]
_REGISTRY: dict[str, Factory] = {}


def register_recognizer(name: str) -> Callable[[Factory], Factory]:
    """Register a factory ``model -> Recognizer`` under `name` (a decorator)."""
    def add(factory: Factory) -> Factory:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise UserError(f"name recognizer {name!r} is registered twice")
        _REGISTRY[name] = factory
        return factory
    return add


def names() -> list[str]:
    """The registered recognizers (built-ins and plug-ins)."""
    plugins.load("rlforge.recognizers")
    return sorted(_REGISTRY)


def get_recognizer(spec: str) -> Recognizer:
    """The recognizer of a ``NAME:MODEL`` setting, its model loaded.

    Raises:
        UnknownName: no recognizer of that name (the message lists them).
        UserError: its package or model is not installed.
    """
    name, _, model = spec.partition(":")
    valid = names()
    if name not in _REGISTRY:
        raise UnknownName("name recognizer", name, valid)
    return _REGISTRY[name](model)


def _need(module: str, what: str, package: str):
    """Import an optional package's module by name (none is a dependency of rlforge)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UserError(f"the {what} name recognizer needs the {package!r} package: "
                        f"pip install {package}, or unset [redaction] recognizer") from exc


def _installed_spacy_model(spacy, model: str) -> None:
    from pathlib import Path

    if not model or not (spacy.util.is_package(model) or Path(model).is_dir()):
        raise UserError(f"spaCy model {model!r} is not installed (rlforge never downloads one): "
                        f"install its package or give a model directory, e.g. "
                        f"recognizer = \"spacy:/path/to/en_core_web_sm\"")


class _Spacy:
    def __init__(self, model: str):
        spacy = _need("spacy", "spaCy", "spacy")
        _installed_spacy_model(spacy, model)
        self._nlp = spacy.load(model)

    def find(self, texts: list[str]) -> list[Spans]:
        return [[(e.start_char, e.end_char) for e in doc.ents if e.label_ in ("PERSON", "PER")]
                for doc in self._nlp.pipe(texts)]


class _Gliner:
    def __init__(self, model: str):
        gliner = _need("gliner", "GLiNER", "gliner")
        from pathlib import Path

        if not Path(model).is_dir():
            raise UserError(f"GLiNER model directory {model!r} not found (rlforge never "
                            f"downloads one): recognizer = \"gliner:/path/to/model\"")
        self._model = gliner.GLiNER.from_pretrained(model, local_files_only=True)

    def find(self, texts: list[str]) -> list[Spans]:
        return [[(e["start"], e["end"]) for e in self._model.predict_entities(t, ["person"])]
                for t in texts]


class _Presidio:
    def __init__(self, model: str):
        analyzer = _need("presidio_analyzer", "Presidio", "presidio-analyzer")
        nlp_engine = _need("presidio_analyzer.nlp_engine", "Presidio", "presidio-analyzer")
        spacy = _need("spacy", "Presidio", "spacy")
        _installed_spacy_model(spacy, model)  # Presidio would download a missing one
        engine = nlp_engine.NlpEngineProvider(nlp_configuration={
            "nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": model}],
        }).create_engine()
        self._engine = analyzer.AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])

    def find(self, texts: list[str]) -> list[Spans]:
        return [[(r.start, r.end) for r in self._engine.analyze(t, language="en", entities=["PERSON"])]
                for t in texts]


register_recognizer("spacy")(_Spacy)
register_recognizer("gliner")(_Gliner)
register_recognizer("presidio")(_Presidio)
