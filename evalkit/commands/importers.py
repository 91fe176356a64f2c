"""``evalkit import``: turn external retrieval data into a corpus plus a frozen eval set,
or a folder of documents (PDF, Word, HTML, Markdown) into a corpus.

Thin wrappers over ``evalkit.importers``; an import error becomes one clear line and
exit code 1. The verbs are the importers registered with a command
(:mod:`evalkit.importers.registry`, plugins included).
"""
from __future__ import annotations

from pathlib import Path

import click

from evalkit.commands import user_errors
from evalkit.importers import BeirFiles, import_beir
from evalkit.importers.dataset import (
    CORPUS_FIELDS,
    EVAL_FIELDS,
    RAGAS_FIELDS,
    import_dataset,
    import_ragas,
    parse_mapping,
)
from evalkit.importers.docs import import_docs
from evalkit.importers.registry import importers


class ImporterGroup(click.Group):
    """The ``import`` group: one verb per importer registered with a command (:mod:`evalkit.importers.registry`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, info in importers().items() if info.command)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        info = importers().get(cmd_name)
        return None if info is None else info.load_command()


@click.group("import", cls=ImporterGroup, context_settings={"help_option_names": ["-h", "--help"]})
def import_() -> None:
    """Turn external data into an evalkit corpus and a frozen eval set, or documents into a corpus.

    \b
    Formats:
      docs     a folder of PDF, Word (.docx), HTML, Markdown and text files: a corpus
               only (titles, PDF page numbers, tables as Markdown rows); add questions
               with `evalkit evalset generate` or your own file
      beir     BEIR folders and Anserini/pyserini files (JSONL corpus; JSONL or TSV
               queries; BEIR TSV or TREC qrels; any of them gzipped)
      dataset  Hugging Face datasets saved to disk, parquet or JSONL files, with a
               column mapping (--map question=query ...) and a corpus of the same kinds
      ragas    ragas samples (user_input, reference_contexts, retrieved_contexts,
               reference): the contexts become the corpus, reference contexts the gold
    """


_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("beir")
@click.argument("source", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--split", default="test", show_default=True,
              help="Which qrels/<split>.tsv of a BEIR folder to import.")
@click.option("--corpus", type=_FILE, default=None,
              help="Corpus JSONL ({_id, title, text} per line); replaces SOURCE/corpus.jsonl.")
@click.option("--queries", type=_FILE, default=None,
              help="Queries as JSONL ({_id, text}) or TSV (id<TAB>text), .gz allowed; replaces SOURCE/queries.jsonl.")
@click.option("--qrels", type=_FILE, default=None,
              help="Qrels as BEIR TSV (query-id corpus-id score) or TREC (qid 0 docid rel); replaces "
                   "SOURCE/qrels/<split>.tsv.")
@click.option("--name", default=None,
              help="Eval set name: writes OUT_DIR/NAME.jsonl and OUT_DIR/corpora/NAME.jsonl. "
                   "Default: the SOURCE folder's name.")
@click.option("--out-dir", default=Path("eval_sets"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Folder of eval sets to write into.")
@click.option("--lang", default="auto", show_default=True,
              help="Language code given to every record; auto: zh, ja or ko by the question's script, else en.")
@click.option("--keep-unanswerable", is_flag=True,
              help="Keep judged queries without any relevant document, as type 'unanswerable' "
                   "(default: skip them).")
@click.option("--description", default=None, help="One line for the manifest (default: where the data came from).")
@click.option("--skip-invalid", is_flag=True,
              help="Drop rows that fail a check (e.g. a gold id the corpus lacks) instead of stopping, and list "
                   "them (file, line, field, value) in OUT_DIR/NAME.skipped.tsv.")
@click.option("--force", is_flag=True, help="Replace an existing eval set and corpus of the same name.")
@user_errors
def beir(source: Path | None, split: str, corpus: Path | None, queries: Path | None, qrels: Path | None,
         name: str | None, out_dir: Path, lang: str, keep_unanswerable: bool, description: str | None,
         skip_invalid: bool, force: bool) -> None:
    """Import a BEIR dataset as a corpus plus an eval set frozen as v1.

    SOURCE is a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).
    Without SOURCE, give all three files. Relevant documents are those with
    rel > 0; queries without one are skipped (and counted).

    \b
    Examples:
      evalkit import beir data/scifact --split test
      evalkit import beir --name scifact \\
        --corpus ../shared/datasets/scifact/corpus.derived.jsonl \\
        --queries ../shared/datasets/scifact/topics.beir-v1.0.0-scifact.test.tsv.gz \\
        --qrels ../shared/datasets/scifact/qrels.beir-v1.0.0-scifact.test.txt
    """
    if source is None:
        missing = [opt for opt, value in (("--corpus", corpus), ("--queries", queries), ("--qrels", qrels))
                   if value is None]
        if missing:
            raise click.UsageError(f"give a BEIR folder (SOURCE) or all three files; missing: {', '.join(missing)}")
        files = BeirFiles(corpus=corpus, queries=queries, qrels=qrels)  # type: ignore[arg-type]
    else:
        files = BeirFiles.from_folder(source, split, corpus, queries, qrels)
    if name is None:
        if source is None:
            raise click.BadParameter("required when no SOURCE folder is given (it names the eval set)",
                                     param_hint=["--name"])
        name = source.resolve().name
    result = import_beir(files, name, out_dir, lang=lang, force=force, keep_unanswerable=keep_unanswerable,
                         description=description, skip_invalid=skip_invalid)
    for line in result.lines():
        click.echo(line)
    click.echo(f"Pin it in a run with: --eval-set {result.eval_set_path}@v{result.version['version']}")


_SOURCE = click.Path(exists=True, path_type=Path)


@click.command("dataset")
@click.argument("source", type=_SOURCE)
@click.option("--corpus", required=True, type=_SOURCE,
              help="Documents: a datasets folder, .parquet or JSONL with id and text columns (title optional).")
@click.option("--name", required=True, help="Eval set name: writes OUT_DIR/NAME.jsonl and OUT_DIR/corpora/NAME.jsonl.")
@click.option("--map", "maps", multiple=True, metavar="FIELD=COLUMN",
              help="Read eval set FIELD from source COLUMN (repeatable): id, question, relevant_doc_ids, type, "
                   "lang, reference_answer, tags, relevance ({doc id: grade}). Unmapped fields use the column "
                   "of the same name.")
@click.option("--corpus-map", "corpus_maps", multiple=True, metavar="FIELD=COLUMN",
              help="Read corpus FIELD (id, title, text) from COLUMN (repeatable); other columns become metadata.")
@click.option("--split", default=None, help="Split of a datasets folder holding several (DatasetDict).")
@click.option("--corpus-split", default=None, help="Split of the corpus datasets folder.")
@click.option("--out-dir", default=Path("eval_sets"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Folder of eval sets to write into.")
@click.option("--lang", default="auto", show_default=True,
              help="Language code of records without a lang column; auto: zh, ja or ko by the question's script, "
                   "else en.")
@click.option("--keep-unanswerable", is_flag=True,
              help="Keep rows without gold documents, as type 'unanswerable' (default: skip them).")
@click.option("--description", default=None, help="One line for the manifest (default: where the data came from).")
@click.option("--skip-invalid", is_flag=True,
              help="Drop rows that fail a check (e.g. a gold id the corpus lacks) instead of stopping, and list "
                   "them (file, line, field, value) in OUT_DIR/NAME.skipped.tsv.")
@click.option("--force", is_flag=True, help="Replace an existing eval set and corpus of the same name.")
@user_errors
def dataset(source: Path, corpus: Path, name: str, maps: tuple[str, ...], corpus_maps: tuple[str, ...],
            split: str | None, corpus_split: str | None, out_dir: Path, lang: str, keep_unanswerable: bool,
            description: str | None, skip_invalid: bool, force: bool) -> None:
    """Import questions (SOURCE) and documents (--corpus) as a corpus plus an eval set frozen as v1.

    SOURCE and --corpus are each a Hugging Face datasets folder (save_to_disk), a
    .parquet file or a JSONL file.

    \b
    Example:
      evalkit import dataset data/qa_hf --split test --corpus data/passages.parquet --name qa \\
        --map question=query --map relevant_doc_ids=positive_ids --corpus-map id=pid --corpus-map text=passage
    """
    result = import_dataset(source, name, out_dir, corpus=corpus, mapping=parse_mapping(maps, EVAL_FIELDS),
                            corpus_mapping=parse_mapping(corpus_maps, CORPUS_FIELDS, "--corpus-map"), split=split,
                            corpus_split=corpus_split, lang=lang, keep_unanswerable=keep_unanswerable, force=force,
                            description=description, skip_invalid=skip_invalid)
    for line in result.lines():
        click.echo(line)
    click.echo(f"Pin it in a run with: --eval-set {result.eval_set_path}@v{result.version['version']}")


@click.command("ragas")
@click.argument("source", type=_SOURCE)
@click.option("--name", required=True, help="Eval set name: writes OUT_DIR/NAME.jsonl and OUT_DIR/corpora/NAME.jsonl.")
@click.option("--map", "maps", multiple=True, metavar="FIELD=COLUMN",
              help="Read ragas FIELD (user_input, reference_contexts, retrieved_contexts, reference, response, id, "
                   "synthesizer_name) from COLUMN (repeatable).")
@click.option("--split", default=None, help="Split of a datasets folder holding several (DatasetDict).")
@click.option("--no-retrieved", is_flag=True, help="Leave retrieved_contexts out of the corpus.")
@click.option("--out-dir", default=Path("eval_sets"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Folder of eval sets to write into.")
@click.option("--lang", default="auto", show_default=True,
              help="Language code given to every record; auto: zh, ja or ko by the question's script, else en.")
@click.option("--keep-unanswerable", is_flag=True,
              help="Keep samples without reference contexts, as type 'unanswerable' (default: skip them).")
@click.option("--description", default=None, help="One line for the manifest (default: where the data came from).")
@click.option("--skip-invalid", is_flag=True,
              help="Drop rows that fail a check (e.g. a gold id the corpus lacks) instead of stopping, and list "
                   "them (file, line, field, value) in OUT_DIR/NAME.skipped.tsv.")
@click.option("--force", is_flag=True, help="Replace an existing eval set and corpus of the same name.")
@user_errors
def ragas(source: Path, name: str, maps: tuple[str, ...], split: str | None, no_retrieved: bool, out_dir: Path,
          lang: str, keep_unanswerable: bool, description: str | None, skip_invalid: bool, force: bool) -> None:
    """Import ragas samples: contexts become the corpus, reference contexts the gold documents.

    SOURCE is a datasets folder (e.g. EvaluationDataset.to_hf_dataset().save_to_disk),
    a .parquet file or a JSONL file (EvaluationDataset.to_jsonl). Each distinct context
    text becomes one document, id ctx-<16 hex of its SHA-256>; 'reference' becomes the
    reference answer; 'response' (a system's answer, not eval data) is kept beside
    the eval set as OUT_DIR/NAME.responses.jsonl, an answers file: score it with
    `evalkit score --answers OUT_DIR/NAME.responses.jsonl --eval-set OUT_DIR/NAME.jsonl@v1`.

    \b
    Example:
      evalkit import ragas testset.jsonl --name ragas_testset
    """
    result = import_ragas(source, name, out_dir, mapping=parse_mapping(maps, RAGAS_FIELDS), split=split, lang=lang,
                          keep_unanswerable=keep_unanswerable, include_retrieved=not no_retrieved, force=force,
                          description=description, skip_invalid=skip_invalid)
    for line in result.lines():
        click.echo(line)
    click.echo(f"Pin it in a run with: --eval-set {result.eval_set_path}@v{result.version['version']}")


@click.command("docs")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--name", required=True, help="Corpus name: writes OUT_DIR/corpora/NAME.jsonl.")
@click.option("--out-dir", default=Path("eval_sets"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Folder of eval sets (the corpus goes to its "
                                                                      "corpora/).")
@click.option("--force", is_flag=True, help="Replace an existing corpus of the same name.")
@user_errors
def docs(folder: Path, name: str, out_dir: Path, force: bool) -> None:
    """Import a folder of documents (PDF, .docx, HTML, Markdown, .txt) as a corpus.

    Each file becomes one document whose id is its path inside FOLDER. Text keeps
    headings and renders tables as Markdown rows; chunk with `table: true` to keep
    each table whole in its own chunks. PDFs record their pages (metadata pages,
    page_starts). A file that cannot be read (damaged, encrypted, a scan without
    text, not UTF-8) is skipped, named with the reason, and listed in
    OUT_DIR/corpora/NAME.skipped.tsv; the others are imported. Importing an
    unchanged folder again (--force) writes the same file. Needs the docs extra:
    pip install 'evalkit-ragraph[docs]'.

    \b
    Example:
      evalkit import docs handbook/ --name handbook
      evalkit evalset generate --corpus eval_sets/corpora/handbook.jsonl --name handbook --n 50
    """
    result = import_docs(folder, name, out_dir, force=force)
    for line in result.lines():
        click.echo(line)
    click.echo(f"Next: questions over it with `evalkit evalset generate --corpus {result.corpus_path} --name {name}`, "
               f"or your own file frozen with `evalkit evalset freeze NAME --corpus {result.corpus_path}`")
