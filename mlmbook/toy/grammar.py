r"""The toy language: an English-like probabilistic grammar whose distribution we know exactly.

The grammar is data (``mlmbook/toy/grammars/toy.yaml``); :func:`compile_grammar` turns it into a
:class:`~mlmbook.toy.pcfg.PCFG` whose nonterminals are split by number and semantic class (chapter
0 describes the language); every derivation is also a Universal Dependencies tree. The topic
variant draws a latent topic per sentence that reweights the words. The language is the grammar's
distribution restricted to sentences of at most ``max_length`` tokens:

.. math:: p(x) = \frac{\sum_t \pi_t Z_t(x)}{P(|x| \le L)} ."""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import torch
import yaml

from ..corpus.sentence import Sentence
from ..errors import GrammarError
from . import knobs as _knobs
from .pcfg import PCFG, BinaryRule

__all__ = ["Grammar", "compile_grammar", "GRAMMAR_DIR"]

GRAMMAR_DIR = Path(__file__).with_name("grammars")
UPOS = {"DET": "DET", "ADJ": "ADJ", "N": "NOUN", "NAME": "PROPN", "V": "VERB", "P": "ADP",
        "ADV": "ADV", "PUNCT": "PUNCT"}


class _Builder:
    """Collects nonterminals, rules and emissions while the schema is walked."""

    def __init__(self, vocab, n_topics):
        self.names, self.index = [], {}
        self.binary, self.unary, self.emit = [], [], {}
        self.vocab, self.T = vocab, n_topics

    def nt(self, name):
        if name not in self.index:
            self.index[name] = len(self.names)
            self.names.append(name)
        return self.index[name]

    def rules(self, lhs, options):
        """options: list of (weight, rhs tuple, head, deprel); weights are normalised here."""
        options = [o for o in options if o[0] > 0]
        total = sum(o[0] for o in options)
        a = self.nt(lhs)
        for w, rhs, head, rel in options:
            if len(rhs) == 1:
                self.unary.append((a, self.nt(rhs[0]), w / total))
            else:
                self.binary.append(BinaryRule(a, self.nt(rhs[0]), self.nt(rhs[1]), w / total, head, rel))

    def words(self, lhs, weights_by_topic):
        """weights_by_topic: list (one per topic) of {word: weight}."""
        self.emit[self.nt(lhs)] = weights_by_topic

    def pcfg(self, prior):
        E = np.zeros((self.T, len(self.names), len(self.vocab)))
        col = {w: k for k, w in enumerate(self.vocab)}
        for a, per_topic in self.emit.items():
            for t, weights in enumerate(per_topic):
                total = sum(weights.values())
                for w, x in weights.items():
                    E[t, a, col[w]] += x / total
        return PCFG(self.names, self.index["ROOT"], self.binary, self.unary, E, np.asarray(prior), self.vocab)


def _vocabulary(spec) -> list:
    words = [w for d in spec["determiners"].values() for w in d] + list(spec["adjectives"])
    words += [w for entries in spec["nouns"].values() for e in entries for w in e[:2]]
    words += list(spec.get("names", []))
    words += [w for frame in spec["verbs"].values() for forms in frame["words"] for w in forms[:3]]
    words += list(spec["adverbs"]) + [w for d in spec["prepositions"].values() for w in d]
    return list(dict.fromkeys(words + ["."]))


def coherence(spec: dict, topic) -> float:
    """The weight a neutral content word keeps inside a topic, for ``topic`` = ``True`` (1.0) or a
    setting named in the schema's ``topic_coherence``."""
    if topic is True or not topic:
        return 1.0
    table = spec.get("topic_coherence", {})
    if topic not in table:
        raise GrammarError(f"no topic_coherence setting {topic!r}: the grammar has {sorted(table)}")
    return float(table[topic])


def compile_grammar(spec: dict, topic: bool | str = False) -> PCFG:
    """Compile a grammar schema (the YAML structure) into a PCFG with dependency-marked rules;
    ``topic``: ``False``, ``True`` (the topic variant) or a ``topic_coherence`` setting's name."""
    topics = list(spec.get("topics", {})) if topic else [None]
    prior = [spec["topics"][t] for t in topics] if topic else [1.0]
    prior = np.asarray(prior) / sum(prior)
    off = spec.get("off_topic", 1.0)
    neutral = coherence(spec, topic)
    b = _Builder(_vocabulary(spec), len(topics))

    def topical(entries):
        """[(word, tag)] -> per-topic weight dicts, off-topic words down-weighted."""
        out = []
        for t in topics:
            d = {}
            for w, tag in entries:
                weight = 1.0 if t is None or tag == t else neutral if tag is None else off
                d[w] = d.get(w, 0.0) + weight
            out.append(d)
        return out

    nums = spec["number"]
    classes = list(spec["nouns"])
    frames = spec["verbs"]
    p_adj, p_adj2 = spec["p_adjective"], spec["p_second_adjective"]

    # sentence, verb phrases ------------------------------------------------------------
    b.rules("ROOT", [(1.0, ("S", "PUNCT"), 0, "punct")])
    b.words("PUNCT", topical([(".", None)]))
    subj = {c: w for c, w in spec["subject"].items() if any(c in f["subject"] for f in frames.values())}
    b.rules("S", [(nums[n] * w, (f"NP_{c}_{n}", f"VP_{c}_{n}"), 1, "nsubj") for c, w in subj.items() for n in nums])
    pp_v = spec["pp_kind"]["verb"]
    for c in subj:
        fw = {f: fr["weight"] * fr["subject"].get(c, 0) for f, fr in frames.items()}
        total = sum(fw.values())
        for n in nums:
            b.rules(f"VP_{c}_{n}", [(spec["p_adverb"], ("ADV", f"VPA_{c}_{n}"), 1, "advmod"),
                                    (1 - spec["p_adverb"], (f"VPA_{c}_{n}",), 0, None)])
            b.rules(f"VPA_{c}_{n}", [(spec["p_pp_on_verb"] * q, (f"VPB_{c}_{n}", f"PP_{k}"), 0, "obl")
                                     for k, q in pp_v.items()]
                    + [(1 - spec["p_pp_on_verb"], (f"VPB_{c}_{n}",), 0, None)])
            opts = []
            for f, w in fw.items():
                if w == 0:
                    continue
                obj = frames[f].get("object")
                if not obj:
                    opts.append((w / total, (f"V_{f}_{n}",), 0, None))
                    continue
                ot = sum(obj.values())
                opts += [(w / total * q / ot * nums[m], (f"V_{f}_{n}", f"NP_{o}_{m}"), 0, "obj")
                         for o, q in obj.items() for m in nums]
            b.rules(f"VPB_{c}_{n}", opts)
    for f, fr in frames.items():
        forms = [(ws, ws[3] if len(ws) > 3 else None) for ws in fr["words"]]
        for n, k in (("sg", 0), ("pl", 1)):
            present = topical([(ws[k], tag) for ws, tag in forms])
            past = topical([(ws[2], tag) for ws, tag in forms])
            mix = []
            for pr, pa in zip(present, past):
                d = {w: (1 - spec["p_past"]) * x / sum(pr.values()) for w, x in pr.items()}
                for w, x in pa.items():
                    d[w] = d.get(w, 0.0) + spec["p_past"] * x / sum(pa.values())
                mix.append(d)
            b.words(f"V_{f}_{n}", mix)

    # noun phrases ---------------------------------------------------------------------
    pp_n = spec["pp_kind"]["noun"]
    for c in classes:
        adjs = {a: cl[c] for a, cl in spec["adjectives"].items() if cl.get(c, 0) > 0}
        if adjs:
            b.words(f"ADJ_{c}", [dict(adjs) for _ in topics])
        pa, pa2 = (p_adj, p_adj2) if adjs else (0.0, 0.0)
        for n in nums:
            b.rules(f"NP_{c}_{n}", [(spec["p_pp_on_noun"] * q, (f"NPB_{c}_{n}", f"PP_{k}"), 0, "nmod")
                                    for k, q in pp_n.items()]
                    + [(1 - spec["p_pp_on_noun"], (f"NPB_{c}_{n}",), 0, None)])
            name = spec["p_proper_name"] if (c == "human" and n == "sg" and spec.get("names")) else 0.0
            bare = spec["p_bare_plural"] if n == "pl" else 0.0
            b.rules(f"NPB_{c}_{n}", [(1 - name - bare, (f"DET_{n}", f"NOM_{c}_{n}"), 1, "det"),
                                     (bare, (f"NOM_{c}_{n}",), 0, None), (name, ("NAME",), 0, None)])
            b.rules(f"NOM_{c}_{n}", [(pa, (f"ADJ_{c}", f"NOM1_{c}_{n}"), 1, "amod"),
                                     (1 - pa, (f"NOM1_{c}_{n}",), 0, None)])
            b.rules(f"NOM1_{c}_{n}", [(pa2, (f"ADJ_{c}", f"N_{c}_{n}"), 1, "amod"),
                                      (1 - pa2, (f"N_{c}_{n}",), 0, None)])
            k = 0 if n == "sg" else 1
            b.words(f"N_{c}_{n}", topical([(e[k], e[2] if len(e) > 2 else None) for e in spec["nouns"][c]]))
    for n in nums:
        b.words(f"DET_{n}", [dict(spec["determiners"][n]) for _ in topics])
    if spec.get("names"):
        b.words("NAME", topical([(w, None) for w in spec["names"]]))

    # prepositional phrases (content head: the noun; the preposition is its `case` dependent)
    kinds = set(pp_v) | set(pp_n)
    if "place" in kinds:
        b.rules("PP_place", [(nums[m], ("P_place", f"NPB_place_{m}"), 1, "case") for m in nums])
        b.words("P_place", [dict(spec["prepositions"]["place"]) for _ in topics])
    if "with" in kinds:
        wo = spec["with_objects"]
        b.rules("PP_with", [(q * nums[m], ("P_with", f"NPB_{c}_{m}"), 1, "case") for c, q in wo.items() for m in nums])
        b.words("P_with", [dict(spec["prepositions"]["with"]) for _ in topics])
    b.words("ADV", [{w: 1.0 for w in spec["adverbs"]} for _ in topics])
    return b.pcfg(prior)


class Grammar:
    """The toy language: sampling with gold trees and exact probabilities.

    Parameters
    ----------
    spec : dict
        The grammar schema (see ``mlmbook/toy/grammars/toy.yaml``).
    topic : bool or str
        Use the latent-topic variant; a string names a ``topic_coherence`` setting of the schema.
    knobs : dict, optional
        Settings of the world's knobs (:mod:`mlmbook.toy.knobs`), e.g. ``{"selection": 0.5}``.
    """

    def __init__(self, spec: dict, topic: bool | str = False, knobs: dict | None = None):
        self.knobs = _knobs.check(knobs)
        self.base_spec = spec
        spec = _knobs.apply(spec, self.knobs, "spec")
        self.spec = spec
        base = (spec.get("name", "grammar") + ("+topic" if topic else "")
                + (f":{topic}" if isinstance(topic, str) else ""))
        self.name = _knobs.format_name(base, self.knobs)
        self.topic = topic
        self.coherence = coherence(spec, topic) if topic else None
        self.pcfg = _knobs.apply(compile_grammar(spec, topic), self.knobs, "pcfg")
        self.vocab = list(self.pcfg.vocab)
        self.word_id = {w: k for k, w in enumerate(self.vocab)}
        self.max_length = int(spec["max_length"])
        self.length_probs = self.pcfg.length_distribution(self.max_length)
        self.topics = list(spec.get("topics", {})) if topic else []
        self._info = self._preterminal_info()
        forms = [ws for fr in spec["verbs"].values() for ws in fr["words"]]
        self._present = {"sg": {ws[0] for ws in forms}, "pl": {ws[1] for ws in forms}}

    @classmethod
    def load(cls, name_or_path: str = "toy", topic: bool | str = False, knobs: dict | None = None) -> "Grammar":
        """Load ``toy`` / ``tiny`` (shipped) or a YAML path; ``toy_topic``: ``toy`` with topics,
        ``toy_topic:ridge``: with the ``ridge`` setting of ``topic_coherence``; a name may end in
        knob settings, ``toy[selection=0.5]`` (:mod:`mlmbook.toy.knobs`), merged with ``knobs``."""
        name_or_path, named = _knobs.parse_name(name_or_path)
        knobs = {**named, **(knobs or {})}
        if ":" in name_or_path and name_or_path.split(":", 1)[0].endswith("_topic"):
            name_or_path, topic = name_or_path.split(":", 1)
            name_or_path = name_or_path[: -len("_topic")]
        elif name_or_path.endswith("_topic"):
            name_or_path, topic = name_or_path[: -len("_topic")], True
        path = Path(name_or_path)
        if not path.suffix:
            path = GRAMMAR_DIR / f"{name_or_path}.yaml"
        if not path.exists():
            shipped = ", ".join(sorted(p.stem for p in GRAMMAR_DIR.glob("*.yaml")))
            raise FileNotFoundError(f"no grammar '{name_or_path}': use one of {shipped} or a path to a .yaml file")
        return cls(yaml.safe_load(path.read_text()), topic=topic, knobs=knobs)

    @property
    def fingerprint(self) -> str:
        """A hash of the grammar (and variant): model caches are keyed by it. The
        ``topic_coherence`` table is left out (only a named setting reads it, adding its value)."""
        core = {k: v for k, v in self.base_spec.items() if k != "topic_coherence"}
        variant = self.topic if self.coherence in (None, 1.0) else [True, {"neutral": self.coherence}]
        blob = json.dumps([core, variant] + ([self.knobs] if self.knobs else []), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def __repr__(self):
        return (f"Grammar({self.name!r}: {len(self.vocab)} words, {len(self.pcfg.nonterminals)} nonterminals, "
                f"{len(self.pcfg.binary)} binary rules, sentences <= {self.max_length} tokens)")

    def _preterminal_info(self):
        info = {}
        for a in self.pcfg.preterminals:
            parts = self.pcfg.nonterminals[a].split("_")
            feats = {}
            if parts[-1] in ("sg", "pl") and parts[0] in ("N", "DET"):
                feats["Number"] = "Sing" if parts[-1] == "sg" else "Plur"
            if parts[0] == "N":
                feats["Class"] = parts[1]
            if parts[0] == "NAME":
                feats.update(Number="Sing", Class="human")
            info[a] = (UPOS.get(parts[0], "X"), feats)
        return info

    def sample(self, n: int, seed: int = 0, progress: bool = False) -> list:
        """``n`` sentences with gold trees by ancestral sampling (over ``max_length``: redrawn)."""
        rng = random.Random(seed)
        out = []
        prior = list(np.cumsum(self.pcfg.topic_prior))
        while len(out) < n:
            u = rng.random() * prior[-1]
            t = next(k for k, c in enumerate(prior) if c > u)
            ids, heads, rels, pres = self.pcfg.sample_derivation(rng, t)
            if len(ids) > self.max_length:
                continue
            feats = []
            for k, a in enumerate(pres):
                f = dict(self._info[a][1])
                if self._info[a][0] == "VERB":
                    number = self.pcfg.nonterminals[a].rsplit("_", 1)[1]
                    if self.vocab[ids[k]] in self._present[number]:
                        f["Number"] = "Sing" if number == "sg" else "Plur"
                feats.append(f)
            out.append(Sentence([self.vocab[w] for w in ids], heads, rels,
                                [self._info[a][0] for a in pres], feats, t if self.topic else None))
        return out

    def encode(self, words) -> torch.Tensor:
        try:
            return torch.tensor([self.word_id[w] for w in words])
        except KeyError as e:
            raise ValueError(f"word {e.args[0]!r} is not in the {self.name} vocabulary") from None

    def log_prob(self, words) -> float:
        """Exact log p(x) (all derivations, all topics), renormalised over lengths <= max_length."""
        if len(words) > self.max_length or not words:
            return float("-inf")
        z = self.pcfg.sentence_weight(self.encode(words)).item()
        return float(np.log(z) - np.log(self.length_probs.sum())) if z > 0 else float("-inf")

    def conditionals(self, words, masked=None) -> np.ndarray:
        """Exact ``p(x_i = w | unmasked rest)`` for every position ``i``: array (n, V)."""
        ids = self.encode(words)
        m = None if masked is None else _mask_vector(masked, len(words))
        return self.pcfg.conditionals(ids, m)[0].numpy()

    def pair_joint(self, words, i: int, j: int) -> np.ndarray:
        """Exact ``p(x_i = a, x_j = b | rest)``: array (V, V)."""
        return next(self.pair_joints(words, [(i, j)]))[1]

    def pair_joints(self, words, pairs=None):
        """Yield ``((i, j), joint)`` per pair (default: all i < j), one batched pass per ``i``."""
        n = len(words)
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)] if pairs is None else list(pairs)
        rows = sorted({i for i, _ in pairs})
        W = self.pcfg.pair_weights(self.encode(words), rows)
        where = {i: k for k, i in enumerate(rows)}
        for i, j in pairs:
            yield (i, j), self.pcfg.expand_pair(W[where[i], :, :, j, :]).numpy()

    def unigram(self, n_samples: int = 20000, seed: int = 0) -> np.ndarray:
        """Word frequencies of a sample (the unigram baseline), smoothed by one count."""
        ids = [self.word_id[w] for s in self.sample(n_samples, seed=seed) for w in s.words]
        counts = 1.0 + np.bincount(ids, minlength=len(self.vocab))
        return counts / counts.sum()


def _mask_vector(masked, n):
    m = torch.zeros(n, dtype=torch.bool)
    as_bools = isinstance(masked, torch.Tensor) and masked.dtype == torch.bool
    m[masked.nonzero().flatten().tolist() if as_bools else list(masked)] = True
    return m
