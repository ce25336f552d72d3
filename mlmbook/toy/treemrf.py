r"""The positive control of chapter 1: a language that is a Markov random field on its gold tree.

Zhang & Hashimoto's argument assumes a language that is a Markov random field (MRF) on its
dependency trees; the toy grammar is not one. Here a sentence of ``n`` tokens has **one tree**,
fixed by its length (:data:`TEMPLATES`), and its words are drawn from

.. math:: p(x \mid n) = \frac{1}{Z_n} \prod_{(h, d) \in T_n} \psi_{r}(x_h, x_d),
          \qquad \psi_r(a, b) = \exp\big(\beta\, s_r(a, b)\big),

over the slots' word classes, with an English-like score :math:`s_r` (:func:`_scores`). Two words
have conditional mutual information (CMI) > 0 given the rest exactly when an edge joins them, so the
maximum spanning tree of the exact CMI is the gold tree. ``strength`` (``treemrf[strength=0.5]``)
multiplies :math:`\beta`. Exact quantities come from belief propagation on the tree;
``treemrf_tiny`` uses the tiny grammar's words, small enough to enumerate."""
from __future__ import annotations

import hashlib
import itertools
import json

import numpy as np
import yaml

from ..corpus.sentence import Sentence
from . import knobs as _knobs
from .grammar import GRAMMAR_DIR, Grammar, _mask_vector, _vocabulary

__all__ = ["TreeMRF", "TEMPLATES", "WORLDS", "is_treemrf", "load_world"]

VERSION = 1

TEMPLATES = {
    3: [("NOUN", 1, "nsubj"), ("IVERB", -1, "root"), (".", 1, "punct")],
    4: [("DET", 1, "det"), ("NOUN", 2, "nsubj"), ("IVERB", -1, "root"), (".", 2, "punct")],
    5: [("DET", 2, "det"), ("ADJ", 2, "amod"), ("NOUN", 3, "nsubj"), ("IVERB", -1, "root"), (".", 3, "punct")],
    6: [("DET", 1, "det"), ("NOUN", 2, "nsubj"), ("TVERB", -1, "root"), ("DET", 4, "det"), ("NOUN", 2, "obj"),
        (".", 2, "punct")],
    7: [("DET", 2, "det"), ("ADJ", 2, "amod"), ("NOUN", 3, "nsubj"), ("TVERB", -1, "root"), ("DET", 5, "det"),
        ("NOUN", 3, "obj"), (".", 3, "punct")],
    8: [("DET", 2, "det"), ("ADJ", 2, "amod"), ("NOUN", 3, "nsubj"), ("TVERB", -1, "root"), ("DET", 6, "det"),
        ("ADJ", 6, "amod"), ("NOUN", 3, "obj"), (".", 3, "punct")],
    9: [("DET", 1, "det"), ("NOUN", 2, "nsubj"), ("TVERB", -1, "root"), ("DET", 4, "det"), ("NOUN", 2, "obj"),
        ("ADP", 7, "case"), ("DET", 7, "det"), ("NOUN", 2, "obl"), (".", 2, "punct")],
    10: [("DET", 2, "det"), ("ADJ", 2, "amod"), ("NOUN", 3, "nsubj"), ("TVERB", -1, "root"), ("DET", 5, "det"),
         ("NOUN", 3, "obj"), ("ADP", 8, "case"), ("DET", 8, "det"), ("NOUN", 3, "obl"), (".", 3, "punct")],
    11: [("DET", 2, "det"), ("ADJ", 2, "amod"), ("NOUN", 4, "nsubj"), ("ADV", 4, "advmod"), ("TVERB", -1, "root"),
         ("DET", 6, "det"), ("NOUN", 4, "obj"), ("ADP", 9, "case"), ("DET", 9, "det"), ("NOUN", 4, "obl"),
         (".", 4, "punct")],
}
"""The tree of every sentence length: its tokens (slot, head index or -1, deprel), final period
included, UD style (content heads)."""

UPOS = {"DET": "DET", "ADJ": "ADJ", "NOUN": "NOUN", "IVERB": "VERB", "TVERB": "VERB", "ADV": "ADV",
        "ADP": "ADP", ".": "PUNCT"}

WORLDS = {
    "treemrf": ("toy", {3: 1, 4: 3, 5: 3, 6: 4, 7: 4, 8: 3, 9: 3, 10: 2, 11: 2}),
    "treemrf_tiny": ("tiny", {3: 1, 4: 2, 6: 2}),
}
"""The shipped worlds: which grammar's words they use and the weight of each length."""

BETA = 1.5
"""Log-potential per unit of score at ``strength=1``."""
COLLOCATION = 0.5
"""Weight of the idiosyncratic (seeded random) head–dependent term in the score."""
PLACE_FRAMES = ("rest", "call", "visit", "see")
"""Verb frames that prefer a place as their oblique ("sleeps in the barn"); the others an
instrument."""
MANNER = ("quickly", "slowly")
"""Adverbs that prefer the frames of :data:`PLACE_FRAMES`; the others prefer the rest."""


def is_treemrf(name: str) -> bool:
    """Whether ``name`` (knob settings included) names a world of this module."""
    return isinstance(name, str) and _knobs.parse_name(name)[0] in WORLDS


def _lexicon(spec: dict) -> dict:
    """Every word's class, number (+1 singular, -1 plural, 0 either) and selection data."""
    lex = {}

    def add(word, cls, number=0, **info):
        if word in lex:  # a form that is both singular and plural ("sheep", "read")
            lex[word]["number"] = 0 if lex[word]["number"] != number else number
            return
        lex[word] = dict(cls=cls, number=number, **info)

    for num, dets in spec["determiners"].items():
        for w in dets:
            add(w, "DET", 1 if num == "sg" else -1)
    for w, likes in spec["adjectives"].items():
        add(w, "ADJ", likes={c for c, x in likes.items() if x > 0})
    for c, entries in spec["nouns"].items():
        for e in entries:
            add(e[0], "NOUN", 1, noun=c)
            add(e[1], "NOUN", -1, noun=c)
    for f, frame in spec["verbs"].items():
        cls = "TVERB" if frame.get("object") else "IVERB"
        for forms in frame["words"]:
            for k, w in enumerate(forms[:3]):
                add(w, cls, (1, -1, 0)[k], frame=f, subject=set(frame["subject"]), object=set(frame.get("object", {})))
    for w in spec["adverbs"]:
        add(w, "ADV")
    with_classes = set(spec.get("with_objects", {}))
    for kind, preps in spec["prepositions"].items():
        for w in preps:
            add(w, "ADP", likes={"place"} if kind == "place" else with_classes)
    add(".", ".")
    return lex


def _scores(rel: str, lex: dict, vocab: list) -> np.ndarray:
    """The structured part of the score, :math:`s_r(a, b)` of head ``a`` and dependent ``b`` (V, V):
    ``det``: number agreement; ``nsubj``: agreement plus the verb's subject classes; ``obj``: the
    verb's object classes; ``amod``/``case``: the adjective's / preposition's noun classes; ``obl``:
    place-loving frames with place nouns; ``advmod``: manner adverbs with those frames. Liked pairs
    score +1, others -1 (agreement: +1 agree, -1 disagree, 0 when a form has no number)."""
    classes = sorted({e["noun"] for e in lex.values() if "noun" in e})
    entry = [lex.get(w, {}) for w in vocab]

    def onehot(field):
        return np.array([[c in e.get(field, ()) for c in classes] for e in entry], dtype=float)

    noun = np.array([[e.get("noun") == c for c in classes] for e in entry], dtype=float)
    number = np.array([e.get("number", 0) for e in entry], dtype=float)
    place_frame = np.array([e.get("frame") in PLACE_FRAMES for e in entry])
    sel = lambda liked: np.where(liked, 1.0, -1.0)                            # noqa: E731
    if rel == "det":
        return np.outer(number, number)
    if rel == "nsubj":
        return np.outer(number, number) + sel(onehot("subject") @ noun.T > 0)
    if rel == "obj":
        return sel(onehot("object") @ noun.T > 0)
    if rel in ("amod", "case"):
        return sel(noun @ onehot("likes").T > 0)
    if rel == "obl":
        return sel(place_frame[:, None] == (noun[:, classes.index("place")] > 0)[None, :])
    if rel == "advmod":
        return sel(place_frame[:, None] == np.array([w in MANNER for w in vocab])[None, :])
    return np.zeros((len(vocab), len(vocab)))


class TreeMRF(Grammar):
    """A language that is a Markov random field on its gold dependency tree, with the interface of
    :class:`~mlmbook.toy.Grammar` but no PCFG (so the trainer, the cache and the estimators take
    it unchanged). Build it with :meth:`load`."""

    def __init__(self, base: str = "treemrf", strength: float = 1.0, seed: int = 0):
        if base not in WORLDS:
            raise ValueError(f"no tree-MRF world {base!r}: use one of {', '.join(WORLDS)}")
        if not 0 <= strength <= 10:
            raise ValueError(f"strength={strength:g} is outside [0, 10]")
        grammar_file, weights = WORLDS[base]
        spec = yaml.safe_load((GRAMMAR_DIR / f"{grammar_file}.yaml").read_text())
        self.base, self.strength, self.seed = base, float(strength), int(seed)
        self.spec = self.base_spec = spec
        self.knobs = {"strength": self.strength} if self.strength != 1.0 else {}
        self.name = base + (f"[strength={self.strength:g}]" if self.knobs else "")
        self.topic, self.topics, self.coherence, self.pcfg = False, [], None, None
        self.vocab = _vocabulary(spec)                     # the same words and ids as the grammar's
        self.word_id = {w: k for k, w in enumerate(self.vocab)}
        self.lexicon = lex = _lexicon(spec)
        self.templates = {n: TEMPLATES[n] for n in weights}
        self.max_length = max(self.templates)
        probs = np.zeros(self.max_length + 1)
        probs[list(weights)] = list(weights.values())
        self.length_probs = probs / probs.sum()
        self._support = {c: np.array([lex.get(w, {}).get("cls") == c for w in self.vocab]) for c in UPOS}
        rng = np.random.default_rng(seed)
        V = len(self.vocab)
        rels = sorted({r for t in self.templates.values() for _, _, r in t})
        self._noise = {r: rng.standard_normal((V, V)) for r in rels}
        self._psi = {}  # (rel, head slot, dep slot) -> (V, V) potential
        self._samplers = {}
        self._plans = {n: self._plan(t) for n, t in self.templates.items()}

    @classmethod
    def load(cls, name: str = "treemrf") -> "TreeMRF":
        """``"treemrf"``, ``"treemrf_tiny"``, optionally with ``[strength=<x>]``."""
        base, settings = _knobs.parse_name(name)
        unknown = set(settings) - {"strength"}
        if unknown:
            raise ValueError(f"the tree-MRF worlds have one knob, strength; got {', '.join(sorted(unknown))}")
        return cls(base, strength=settings.get("strength", 1.0))

    @property
    def fingerprint(self) -> str:
        core = {k: v for k, v in self.base_spec.items() if k != "topic_coherence"}
        blob = json.dumps(["treemrf", VERSION, self.base, core, self.strength, self.seed, BETA, COLLOCATION,
                           {str(n): t for n, t in self.templates.items()}, self.length_probs.tolist()],
                          sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def __repr__(self):
        return (f"TreeMRF({self.name!r}: {len(self.vocab)} words, one tree per length "
                f"{min(self.templates)}..{self.max_length})")

    def potential(self, rel: str, head_slot: str, dep_slot: str) -> np.ndarray:
        r"""Edge potential :math:`\psi_r(a, b)` on the vocabulary (0 outside the slots' classes)."""
        key = (rel, head_slot, dep_slot)
        if key not in self._psi:
            hs, ds = self._support[head_slot], self._support[dep_slot]
            S = _scores(rel, self.lexicon, self.vocab) + COLLOCATION * self._noise[rel]
            self._psi[key] = np.where(hs[:, None] & ds[None, :], np.exp(BETA * self.strength * S), 0.0)
        return self._psi[key]

    def _plan(self, template):
        """Children, a root-first order and the potential of every edge of one template."""
        heads = [h for _, h, _ in template]
        children = [[d for d, h in enumerate(heads) if h == k] for k in range(len(template))]
        root = heads.index(-1)
        order, stack = [], [root]
        while stack:
            k = stack.pop()
            order.append(k)
            stack += children[k]
        psi = {d: self.potential(r, template[h][0], slot) for d, (slot, h, r) in enumerate(template) if h >= 0}
        unary = [self._support[slot].astype(float) for slot, _, _ in template]
        return dict(children=children, order=order, root=root, psi=psi, unary=unary, heads=heads)

    def _template(self, n: int):
        if n not in self._plans:
            raise ValueError(f"the {self.name} world has no sentences of {n} tokens "
                             f"(lengths {', '.join(map(str, sorted(self._plans)))})")
        return self._plans[n]

    def _messages(self, plan, evidence):
        """Sum–product messages for node potentials ``evidence[k]`` (V,), each summing to 1:
        ``up[d]`` from ``d`` to its head, ``down[d]`` from the head of ``d`` to ``d``."""
        heads, children, psi = plan["heads"], plan["children"], plan["psi"]
        up, down = {}, {}
        for d in reversed(plan["order"]):                     # leaves first
            if heads[d] < 0:
                continue
            inner = evidence[d].copy()
            for c in children[d]:
                inner = inner * up[c]
            m = psi[d] @ inner
            up[d] = m / max(m.sum(), 1e-300)
        for h in plan["order"]:                               # root first
            for d in children[h]:
                inner = evidence[h].copy()
                if heads[h] >= 0:
                    inner = inner * down[h]
                for c in children[h]:
                    if c != d:
                        inner = inner * up[c]
                m = psi[d].T @ inner
                down[d] = m / max(m.sum(), 1e-300)
        return up, down

    def _cavity(self, plan, up, down, k, skip=None):
        """p(x_k | evidence elsewhere): ``unary_k`` times the messages into ``k`` but ``skip``'s."""
        b = plan["unary"][k].copy()
        if plan["heads"][k] >= 0 and plan["heads"][k] != skip:
            b = b * down[k]
        for c in plan["children"][k]:
            if c != skip:
                b = b * up[c]
        return b

    def _evidence(self, plan, ids, masked):
        """Node potentials: each slot's support, reduced to the observed word where not masked."""
        return [u if masked[k] else np.where(np.arange(len(u)) == ids[k], u, 0.0)
                for k, u in enumerate(plan["unary"])]

    def log_prob(self, words) -> float:
        """Exact :math:`\\log p(x) = \\log p(n) + \\sum_{\\text{edges}} \\log \\psi - \\log Z_n`."""
        n = len(words)
        if n not in self._plans:
            return float("-inf")
        plan, ids = self._plans[n], self.encode(words).tolist()
        if any(plan["unary"][k][ids[k]] == 0 for k in range(n)):
            return float("-inf")
        with np.errstate(divide="ignore"):
            lp = sum(np.log(plan["psi"][d][ids[h], ids[d]]) for d, h in enumerate(plan["heads"]) if h >= 0)
        return float(np.log(self.length_probs[n]) + lp - self._log_z(plan))

    def _log_z(self, plan) -> float:
        """:math:`\\log Z_n` by an upward pass with unnormalised messages (in log scale)."""
        log_up = {}
        heads, children, psi = plan["heads"], plan["children"], plan["psi"]
        for d in reversed(plan["order"]):
            inner = np.log(np.maximum(plan["unary"][d], 1e-300)) + sum((log_up[c] for c in children[d]), 0.0)
            inner = np.where(plan["unary"][d] > 0, inner, -np.inf)
            top = inner.max()
            total = np.log(np.maximum((psi[d] @ np.exp(inner - top)) if heads[d] >= 0 else np.exp(inner - top).sum(),
                                      1e-300)) + top
            if heads[d] < 0:
                return float(total)
            log_up[d] = total
        raise AssertionError("a template without a root")

    def conditionals(self, words, masked=None) -> np.ndarray:
        """Exact ``p(x_i = w | unmasked rest)`` per position, (n, V) (all 0: impossible context)."""
        n = len(words)
        plan = self._template(n)
        m = np.zeros(n, dtype=bool) if masked is None else _mask_vector(masked, n).numpy()
        ids = [self.word_id.get(w, 0) if not m[k] else 0 for k, w in enumerate(words)]
        if not all(m[k] or w in self.word_id for k, w in enumerate(words)):
            raise ValueError(f"a word of {words!r} is not in the {self.name} vocabulary")
        up, down = self._messages(plan, self._evidence(plan, ids, m))
        out = np.stack([self._cavity(plan, up, down, k) for k in range(n)])
        z = out.sum(1, keepdims=True)
        return np.divide(out, z, out=np.zeros_like(out), where=z > 0)

    def pair_joint(self, words, i: int, j: int) -> np.ndarray:
        """Exact ``p(x_i = a, x_j = b | rest)``: array (V, V)."""
        n = len(words)
        plan = self._template(n)
        ids = self.encode(words).tolist()
        m = np.zeros(n, dtype=bool)
        m[[i, j]] = True
        up, down = self._messages(plan, self._evidence(plan, ids, m))
        heads = plan["heads"]
        if heads[j] == i or heads[i] == j:                    # an edge: the tree splits there
            a = self._cavity(plan, up, down, i, skip=j)
            b = self._cavity(plan, up, down, j, skip=i)
            P = a[:, None] * (plan["psi"][j] if heads[j] == i else plan["psi"][i].T) * b[None, :]
        else:                                                 # observed words separate them
            P = np.outer(self._cavity(plan, up, down, i), self._cavity(plan, up, down, j))
        z = P.sum()
        return P / z if z > 0 else P

    def pair_joints(self, words, pairs=None):
        """Yield ``((i, j), joint)`` for each pair (default: all ``i < j``)."""
        n = len(words)
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)] if pairs is None else list(pairs)
        for i, j in pairs:
            yield (i, j), self.pair_joint(words, i, j)

    def _sampler(self, n: int):
        """Per template: the root's law and each word's law given its head's word (CDF tables)."""
        if n not in self._samplers:
            plan = self._plans[n]
            up, _ = self._messages(plan, plan["unary"])
            root = plan["root"]
            beta = {k: self._cavity(plan, up, {}, k, skip=plan["heads"][k]) for k in range(n)}
            cdfs = {}
            for d, h in enumerate(plan["heads"]):
                if h >= 0:
                    T = plan["psi"][d] * beta[d][None, :]
                    z = T.sum(1, keepdims=True)
                    T = np.divide(T, z, out=np.zeros_like(T), where=z > 0)
                    cdfs[d] = np.cumsum(T, axis=1)
            p_root = beta[root] / beta[root].sum()
            self._samplers[n] = (np.cumsum(p_root), cdfs)
        return self._samplers[n]

    def sample(self, n: int, seed: int = 0, progress: bool = False) -> list:
        """``n`` sentences with their gold trees (exact ancestral sampling, root first)."""
        rng = np.random.default_rng(seed)
        lengths = rng.choice(len(self.length_probs), size=n, p=self.length_probs)
        out = [None] * n
        for L in np.unique(lengths):
            rows = np.flatnonzero(lengths == L)
            plan = self._plans[int(L)]
            root_cdf, cdfs = self._sampler(int(L))
            X = np.zeros((len(rows), int(L)), dtype=int)
            for k in plan["order"]:
                u = rng.random(len(rows))
                cdf = root_cdf[None, :] if plan["heads"][k] < 0 else cdfs[k][X[:, plan["heads"][k]]]
                X[:, k] = np.minimum((cdf < u[:, None] * cdf[:, -1:]).sum(1), len(self.vocab) - 1)
            for r, ids in zip(rows, X):
                out[r] = self._sentence(int(L), ids)
        return out

    def _sentence(self, n: int, ids) -> Sentence:
        words = [self.vocab[i] for i in ids]
        template = self.templates[n]
        feats = []
        for w, (slot, _, _) in zip(words, template):
            number = self.lexicon[w]["number"] if slot in ("NOUN", "DET", "IVERB", "TVERB") else 0
            f = {"Number": "Sing" if number > 0 else "Plur"} if number else {}
            if slot == "NOUN":
                f["Class"] = self.lexicon[w]["noun"]
            feats.append(f)
        return Sentence(words, [h for _, h, _ in template], [r for _, _, r in template],
                        [UPOS[s] for s, _, _ in template], feats, None)

    def enumerate(self, max_sentences: int = 2_000_000) -> dict:
        """Every sentence with its probability (brute force, for tests on ``treemrf_tiny``)."""
        table = {}
        for n, plan in self._plans.items():
            supports = [np.flatnonzero(u) for u in plan["unary"]]
            if np.prod([len(s) for s in supports], dtype=float) > max_sentences:
                raise ValueError(f"{self.name} has too many sentences of length {n} to enumerate")
            for ids in itertools.product(*supports):
                w = np.prod([plan["psi"][d][ids[h], ids[d]] for d, h in enumerate(plan["heads"]) if h >= 0])
                table[tuple(self.vocab[i] for i in ids)] = w
            total = sum(v for k, v in table.items() if len(k) == n)
            for k in [k for k in table if len(k) == n]:
                table[k] *= self.length_probs[n] / total
        return table


def load_world(name: str):
    """A :class:`TreeMRF` for its names, else :meth:`Grammar.load` (where a name may be either)."""
    return TreeMRF.load(name) if is_treemrf(name) else Grammar.load(name)

