"""Human labels for judged answers: draw a sample to label, read it back, correct the judge's figures.

What it is for: ``evalkit label RUN --variant V`` writes a stratified random sample of a
variant's judged answers as a JSONL file (and an HTML page to label it in a browser);
``--labels FILE`` on ``run``, ``compare`` and ``gate`` (and :func:`corrected_estimates`
for any caller, ``evalkit score`` included) turns the labels into prediction-powered
estimates (:mod:`evalkit.analysis.ppi`) beside the raw judge figures.

**The population** of a variant is its answered queries whose judge faithfulness is
defined (the answers the judge could check, exactly those the raw figures average):
``faithfulness`` over all of them, ``hallucination_rate`` over the answerable ones (on an
unanswerable question, answering at all is the hallucination: no judge is involved).

**The sample** is stratified by the judge's verdict class (``unsupported`` /
``unverified`` / ``supported``, Neyman allocation: more labels where the judge is
unsure), by question type or not at all (``--strata``); the rules and the allocation are
in :mod:`evalkit.analysis.label_sample`. It is drawn with a seeded ``random.Random`` over
sorted query ids; every line records its stratum, the stratum's size, the rule and the seed.

**The estimate** groups the population by the rule the labels were drawn with, each
member's stratum recomputed from its current metrics, and weighs stratum h by
:math:`N_h / N`. Labels drawn with different rules are not combined (a note says so);
a labelled answer whose stratum changed since (the judge was re-run) is counted in a note.

**A label line** holds the question, the answer, the evidence passages (ids and text),
the judge's claim verdicts, and the fields a person fills: ``claims[i].supported``
(true / false / null for "cannot tell") and ``hallucinated`` (true when any claim is
unsupported; left null, it is derived from the claims). The faithfulness label is the
share of the claims labelled true among those labelled. A line applies to a variant
whose answer to that query is still the labelled one (an answer that changed since is
*stale*: it is dropped and counted, never silently relabelled).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.analysis import label_sample
from evalkit.analysis.label_sample import MIN_PER_STRATUM, STRATA, strata_rule
from evalkit.analysis.ppi import Agreement, Estimate, Stratum, agreement, stratified_ppi
from evalkit.errors import EvalkitError, LocatedError
from evalkit.fileio import jsonl_lines
from evalkit.index.chunking import chunk_corpus, with_defaults
from evalkit.index.corpus import load_corpus
from evalkit.records import QueryResult
from evalkit.scoring.answers import answer_evidence, read_answers
from evalkit.scoring.locate import CorpusLocator

__all__ = ["MIN_PER_STRATUM", "Corrected", "LabelError", "answer_sha", "corrected_estimates", "draw_sample",
           "label_line", "load_label_files", "passage_texts", "population", "prior_error_shares", "read_labels",
           "write_labels"]

METRICS = {"hallucination_rate": "hallucinated", "faithfulness": "faithfulness"}
"""Variant metric -> the per-query judge value it averages (what the labels correct)."""


class LabelError(LocatedError):
    """A label file that cannot be used: bad JSON, a missing field, a value of the wrong type."""


def answer_sha(question: str, answer: str) -> str:
    """The identity of a labelled answer: sha256 of question and answer (16 hex characters)."""
    return hashlib.sha256(f"{question}\x1f{answer}".encode()).hexdigest()[:16]


def _judged(r: QueryResult, key: str) -> float:
    """The judge's per-query ``key`` (faithfulness, hallucinated), defined on every query of :func:`population`."""
    value = r.metrics[key]
    if value is None:
        raise ValueError(f"query {r.query_id}: '{key}' is undefined, yet the query is in the labelled population")
    return float(value)


def population(results: Sequence[QueryResult]) -> list[QueryResult]:
    """The answered queries whose judge faithfulness is defined (see the module docstring)."""
    return [r for r in results if r.generation and r.generation.get("answered")
            and r.metrics.get("faithfulness") is not None]


def draw_sample(results: Sequence[QueryResult], n: int, *, seed: int = 0, strata: str = "verdict",
                error_share: Mapping[str, float] | None = None) -> list[tuple[QueryResult, dict[str, Any]]]:
    """A stratified random sample of about ``n`` answers of the population, each with its sample record
    (:func:`evalkit.analysis.label_sample.draw_sample`)."""
    return label_sample.draw_sample(population(results), n, seed=seed, strata=strata, error_share=error_share)


def prior_error_shares(results: Sequence[QueryResult], labels: Sequence[Label], variant: str) -> dict[str, float]:
    """``p_h`` per verdict class from earlier labels of ``variant`` whose answer is unchanged
    (:func:`evalkit.analysis.label_sample.error_shares`); the prior alone without any."""
    pop = {r.query_id: r for r in population(results)}
    pairs = []
    for lab in labels:
        r = pop.get(lab.query_id)
        if lab.variant == variant and lab.hallucinated is not None and r is not None \
                and answer_sha(r.question, (r.generation or {}).get("answer", "")) == lab.answer_sha:
            pairs.append((label_sample.verdict_class(r), lab.hallucinated))
    return label_sample.error_shares(pairs)


def label_line(r: QueryResult, sample: dict[str, Any], variant: str, run: str,
               texts: dict[str, str]) -> dict[str, Any]:
    """One line to label (see the module docstring); ``texts`` maps passage ids to their text."""
    g = r.generation or {}
    judgement = g.get("judgement") or {}
    claims = judgement.get("claims") or []
    return {
        "query_id": r.query_id, "variant": variant, "run": run, "question": r.question, "answer": g.get("answer", ""),
        "answer_sha": answer_sha(r.question, g.get("answer", "")), "reference_answer": g.get("reference_answer"),
        "evidence": [{"id": e[0], "doc_id": e[1], "text": texts.get(e[0], "")} for e in g.get("evidence", [])],
        "judge": {"identity": g.get("judge"), "hallucinated": r.metrics.get("hallucinated"),
                  "faithfulness": r.metrics.get("faithfulness"), "claims": claims},
        "claims": [{"claim": c.get("claim"), "judge": c.get("verdict"), "supported": None} for c in claims],
        "hallucinated": None, "note": "", "sample": {"variant": variant, **sample},
    }


def write_labels(lines: Iterable[dict[str, Any]], path: Path) -> Path:
    """Write label lines as JSONL (UTF-8, one object per line)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


@dataclass
class Label:
    """What a person said about one answer, and how it was sampled."""

    query_id: str
    variant: str
    answer_sha: str
    stratum: str
    hallucinated: bool | None
    faithfulness: float | None
    run: str = ""  # the label of the run it was drawn from (summary file stem)
    strata_by: str = ""  # the --strata rule it was drawn with ("" in files from before it was recorded)


def _bool(value: Any, file: str, line: int, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise LabelError(file, where, f"expected true, false or null, got {json.dumps(value)}", line=line)


HEADER_KEY = "header"
"""A label file may start with ``{"header": {...}}``: who labelled, how, and when (free-form fields;
``labelled_by`` says whether a person read the answers or a judge made the labels). Readers skip it."""


def read_header(path: str | Path) -> dict[str, Any]:
    """The ``{"header": {...}}`` first line of a label file (who labelled and how); ``{}`` when there is none."""
    with Path(path).open(encoding="utf-8") as f:
        first = next((line for line in f if line.strip()), "")
    try:
        d = json.loads(first) if first else {}
    except json.JSONDecodeError:
        return {}
    return dict(d[HEADER_KEY]) if isinstance(d, dict) and set(d) == {HEADER_KEY} and isinstance(d[HEADER_KEY], dict) \
        else {}


def read_labels(path: str | Path) -> list[Label]:
    """Read a label file; a bad line raises :class:`LabelError` naming the file, line and field."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise LabelError(file, "", f"cannot read the label file ({exc.strerror})") from exc
    out = []
    for i, raw in enumerate(jsonl_lines(text), start=1):
        if not raw.strip():
            continue
        try:
            d = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise LabelError(file, "", f"not JSON ({exc.msg})", line=i) from exc
        if isinstance(d, dict) and set(d) == {HEADER_KEY}:
            continue  # the file's header: who labelled and how (LABEL_HEADER), not a label
        for key in ("query_id", "variant", "answer_sha", "claims", "sample"):
            if key not in d:
                raise LabelError(file, key, "missing (write label files with `evalkit label`)", line=i)
        claims = [_bool(c.get("supported"), file, i, f"claims[{k}].supported") for k, c in enumerate(d["claims"])]
        hall = _bool(d.get("hallucinated"), file, i, "hallucinated")
        known = [c for c in claims if c is not None]
        if hall is None and known:
            hall = not all(known) if (False in known or len(known) == len(claims)) else None
        faith = sum(known) / len(known) if known else None
        sample = d["sample"] if isinstance(d["sample"], dict) else {}
        if sample.get("strata_by") and sample["strata_by"] not in STRATA:
            raise LabelError(file, "sample.strata_by", f"unknown rule {json.dumps(sample['strata_by'])}: one of "
                             f"{', '.join(STRATA)} (as `evalkit label --strata` writes it)", line=i)
        out.append(Label(str(d["query_id"]), str(d["variant"]), str(d["answer_sha"]),
                         str(sample.get("stratum", "all")), hall, faith, str(d.get("run") or ""),
                         str(sample.get("strata_by") or "")))
    return out


@dataclass
class Corrected:
    """The corrected figures of one variant: estimates, the raw judge figures and the judge's agreement."""

    variant: str
    estimates: dict[str, Estimate] = field(default_factory=dict)  # metric -> corrected estimate
    raw: dict[str, float] = field(default_factory=dict)           # metric -> the judge's figure
    agreement: Agreement | None = None
    n_labels: int = 0
    stale: int = 0            # labelled answers that changed since (dropped)
    unlabelled: int = 0       # lines with no label filled in yet
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "estimates": {k: e.to_dict() for k, e in self.estimates.items()},
                "raw": self.raw, "agreement": self.agreement.to_dict() if self.agreement else None,
                "n_labels": self.n_labels, "stale": self.stale, "unlabelled": self.unlabelled, "notes": self.notes}


def corrected_estimates(results: Sequence[QueryResult], labels: Sequence[Label], variant: str, *,
                        run: str | None = None, confidence: float = 0.95) -> Corrected | None:
    """Prediction-powered estimates of ``hallucination_rate`` and ``faithfulness`` for one variant.

    ``results`` are the variant's per-query records; ``labels`` those of any label files
    (lines of other variants are ignored; when some lines name ``run``, only those are
    used, so two runs with a variant of the same name each get their own sample). None
    when no label line names this variant.
    """
    mine = [lab for lab in labels if lab.variant == variant]
    if run is not None and any(lab.run == run for lab in mine):
        mine = [lab for lab in mine if lab.run == run]
    if not mine:
        return None
    out = Corrected(variant)
    pop = {r.query_id: r for r in population(results)}
    outside = sum(1 for r in results if r.generation and r.generation.get("answered")
                  and r.metrics.get("faithfulness") is None)
    if outside:  # what the estimate is about: a user must not read it as covering every answer
        out.notes.append(f"population: the {len(pop)} answered queries with a judged claim; {outside} answered "
                         "one(s) with no judged claim (or a failed judge) are outside it, and no estimate covers them")
    by_q = {r.query_id: r for r in results}
    usable: dict[str, Label] = {}
    for lab in mine:
        r = by_q.get(lab.query_id)
        if r is None or lab.query_id not in pop or answer_sha(r.question, (r.generation or {}).get("answer", "")) \
                != lab.answer_sha:
            out.stale += 1
            continue
        usable[lab.query_id] = lab
    by = _strata_by(usable.values())
    if by is None:
        out.notes.append("labels drawn with different --strata (" + ", ".join(sorted({_rule_of(lab) for lab in
                         usable.values()})) + "): not corrected; label one sample drawn with one rule")
        out.n_labels = len(usable)
        return out
    stratum = strata_rule(by).stratum
    moved = sum(1 for q, lab in usable.items() if lab.stratum != stratum(pop[q]))
    if moved:
        out.notes.append(f"{moved} labelled answer(s) now fall in another stratum than when drawn (the judge's "
                         "verdicts or the question types changed): grouped by their current stratum; draw a new sample")
    for metric, key in METRICS.items():
        members = [r for r in pop.values() if metric == "faithfulness" or r.answerable]
        value = (lambda lab: lab.faithfulness) if metric == "faithfulness" else \
            (lambda lab: None if lab.hallucinated is None else float(lab.hallucinated))
        labelled = {q: v for q, lab in usable.items() if q in {r.query_id for r in members}
                    and (v := value(lab)) is not None}
        if not members:
            continue
        out.raw[metric] = sum(_judged(r, key) for r in members) / len(members)
        groups: dict[str, tuple[list[float], list[float], list[float]]] = {}
        for r in sorted(members, key=lambda r: r.query_id):
            g = groups.setdefault(stratum(r), ([], [], []))
            if r.query_id in labelled:
                g[0].append(labelled[r.query_id])
                g[1].append(_judged(r, key))
            else:
                g[2].append(_judged(r, key))
        empty = [k for k, g in groups.items() if not g[0]]
        if empty:
            out.notes.append(f"{metric}: no label in stratum {', '.join(sorted(empty))}; not corrected")
            continue
        out.estimates[metric] = stratified_ppi({k: Stratum(*g) for k, g in groups.items()}, confidence=confidence,
                                               pseudo_labels=True)
    hall = [(lab.hallucinated, pop[q].metrics["hallucinated"] or 0.0) for q, lab in usable.items()
            if lab.hallucinated is not None and pop[q].answerable]
    out.agreement = agreement([a for a, _ in hall], [b for _, b in hall]) if hall else None
    out.n_labels = len(usable)
    out.unlabelled = sum(1 for lab in usable.values() if lab.hallucinated is None and lab.faithfulness is None)
    if out.stale:
        out.notes.append(f"{out.stale} labelled answer(s) differ from this run's answers (stale): left out")
    return out


def _rule_of(lab: Label) -> str:
    return lab.strata_by or ("none" if lab.stratum == "all" else "type")


def _strata_by(labels: Iterable[Label]) -> str | None:
    """The --strata rule the labels were drawn with; None when they were drawn with different rules.

    Files from before the rule was recorded: ``none`` when every stratum is ``all``, else ``type``.
    """
    rules = {_rule_of(lab) for lab in labels}
    return rules.pop() if len(rules) == 1 else (None if rules else "none")


def passage_texts(run: Any, variant: str) -> dict[str, str]:
    """The text of every passage a variant's answers were shown (chunked as the variant ran).

    The corpus is found from the run's summary (``eval_set.corpus``), else from the manifest
    of the eval set it names; a run whose corpus cannot be found raises with both places.
    """
    scored = _answers_file_texts(run, variant)
    ref = run.summary.eval_set
    if scored is not None and (ref.kind == "answers_file" or all(scored.get(p) for p in _evidence_ids(run, variant))):
        return {pid: scored.get(pid, "") for pid in _evidence_ids(run, variant)}
    candidates = [Path(ref.corpus)] if ref.corpus else []
    if ref.path:
        from evalkit.evalsets.manifest import read_manifest

        try:
            m = read_manifest(Path(ref.path))
        except EvalkitError:
            m = None
        if m is not None:
            candidates.append(m.corpus_path)
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
        raise EvalkitError(f"{run.source}: the corpus of this run was not found (tried "
                           f"{', '.join(map(str, candidates)) or 'nothing recorded'}); label pages need passage texts")
    config = run.config(variant)
    chunking = config.chunking if config is not None else with_defaults(None)
    corpus = load_corpus(path)
    passages = chunk_corpus(corpus, chunking)
    documents = {d.id: d.text for d in corpus.documents}
    out = {}
    for pid in _evidence_ids(run, variant):
        try:
            out[pid] = passages.text(pid)
        except KeyError:  # an answers file ranks documents: a document id shows its text
            out[pid] = (scored or {}).get(pid) or documents.get(pid, "")
    return out


def _evidence_ids(run: Any, variant: str) -> set[str]:
    return {e[0] for r in run.results(variant) for e in (r.generation or {}).get("evidence", [])}


def _answers_file_texts(run: Any, variant: str) -> dict[str, str] | None:
    """Evidence id -> text of a variant scored from an answers file (``evalkit score --answers``):
    the contexts the file gave, read as the scorer read them (None for any other run)."""
    meta = run.folder / variant / "run.json" if run.folder is not None else None
    if meta is None or not meta.is_file():
        return None
    source = json.loads(meta.read_text(encoding="utf-8")).get("source") or {}
    if source.get("kind") != "answers" or not source.get("file"):
        return None

    path = Path(source["file"])
    if not path.exists():
        raise EvalkitError(f"{run.source}: the answers file it was scored from ({path}) was not found; label pages "
                           "need the passage texts it gave")
    file = read_answers(path, mapping=source.get("columns"), answers_format=source.get("format") or "auto")
    if source.get("sha256") and file.sha256 != source["sha256"]:
        raise EvalkitError(f"{run.source}: the answers file {path} changed since it was scored (sha256); score it "
                           "again before labelling")
    locate = _locator(run.summary.eval_set.corpus)
    return {e.id: e.text for row in file.rows if row.contexts is not None
            for e in answer_evidence(row, file, None, 0, locate)}


def _locator(corpus_path: str | None) -> Any:
    """The corpus look-up the scorer gave contexts without ids (their ids, hence passage ids, depend on it)."""
    if not corpus_path or not Path(corpus_path).is_file():
        return None

    return CorpusLocator(load_corpus(corpus_path)).doc_of


def load_label_files(paths: Sequence[str | Path]) -> list[Label]:
    """Every label of every file, in order."""
    return [lab for p in paths for lab in read_labels(p)]


def corrected_for_runs(refs: Sequence[tuple[str, Any, str]], label_files: Sequence[str | Path], *,
                       confidence: float = 0.95) -> dict[str, Corrected]:
    """``{label: Corrected}`` for (label, loaded run, variant) triples that have labels (for compare and gate)."""
    labels = load_label_files(label_files)
    out = {}
    for key, run, variant in refs:
        c = corrected_estimates(run.results(variant), labels, variant, run=run.label, confidence=confidence)
        if c is not None:
            out[key] = c
    return out


def from_dict(d: dict[str, Any]) -> Corrected:
    """A :class:`Corrected` back from :meth:`Corrected.to_dict` (as stored in summary.json)."""
    a = d.get("agreement")
    return Corrected(d["variant"], {k: Estimate(**e) for k, e in d.get("estimates", {}).items()}, dict(d.get("raw", {})),
                     Agreement(a["n"], a["tp"], a["fp"], a["tn"], a["fn"]) if a else None, d.get("n_labels", 0),
                     d.get("stale", 0), d.get("unlabelled", 0), list(d.get("notes", [])))
