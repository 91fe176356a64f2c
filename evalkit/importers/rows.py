"""Reading the rows of an import source and mapping its columns to evalkit fields.

Sources: a Hugging Face ``datasets`` folder (``save_to_disk``), a ``.parquet`` file, or
JSONL / a JSON array (optionally gzipped). Every row comes with its 1-based line (JSONL)
or row number (parquet, datasets), which errors and ``--skip-invalid`` reports quote.
Used by :mod:`evalkit.importers.dataset` and :mod:`evalkit.scoring.answers`.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError, did_you_mean
from evalkit.importers.formats import ImportFormatError, _json_object, _lines

ColumnMap = dict[str, str]
Row = tuple[int, dict[str, Any]]


# ---------------------------------------------------------------------------------------- reading


def read_rows(source: str | Path, split: str | None = None) -> tuple[str, list[Row], list[str]]:
    """Read a dataset folder, parquet or JSONL file: ``(label for errors, [(line or row, row)], columns)``."""
    path = Path(source)
    if path.is_dir():
        return _read_hf(path, split)
    if not path.is_file():
        raise ImportFormatError(str(path), "", "no such file or folder (expected a datasets folder written by "
                                "save_to_disk, a .parquet file or a JSONL file)")
    if split is not None:
        raise ImportFormatError(str(path), "", f"--split '{split}' applies to a datasets folder only")
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes[-1:] == [".parquet"]:
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise ImportFormatError(str(path), "", f"cannot read parquet ({exc})") from exc
        return str(path), list(enumerate(table.to_pylist(), start=1)), list(table.column_names)
    if not {".jsonl", ".json", ".ndjson"} & set(suffixes):
        raise ImportFormatError(str(path), "", "unknown file type: use .parquet, .jsonl (optionally .gz) or a "
                                "datasets folder (save_to_disk)")
    return _read_json(path)


def _read_hf(path: Path, split: str | None) -> tuple[str, list[Row], list[str]]:
    import datasets

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as exc:  # datasets raises FileNotFoundError or its own errors
        raise ImportFormatError(str(path), "", f"not a datasets folder written by save_to_disk ({exc})") from exc
    label = str(path)
    if isinstance(ds, datasets.DatasetDict):
        splits = list(ds)
        if split is None and len(splits) == 1:
            split = splits[0]
        if split not in ds:
            msg = (f"no split '{split}'{did_you_mean(split, splits)}" if split is not None else
                   f"the dataset has splits {', '.join(splits)}; choose one with --split")
            raise ImportFormatError(label, "", msg)
        ds, label = ds[split], f"{path}[{split}]"
    elif split is not None:
        raise ImportFormatError(label, "", f"--split '{split}' given but the folder holds one Dataset, not splits")
    return label, list(enumerate(ds.to_list(), start=1)), list(ds.column_names)


def _read_json(path: Path) -> tuple[str, list[Row], list[str]]:
    lines = list(_lines(path))
    if lines and lines[0][1].lstrip().startswith("["):
        try:
            data = json.loads("\n".join(text for _, text in lines))
        except json.JSONDecodeError as exc:
            raise ImportFormatError(str(path), "", f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
        if not all(isinstance(x, dict) for x in data):
            raise ImportFormatError(str(path), "", "a JSON array must hold one object per record")
        rows = list(enumerate(data, start=1))
    else:
        rows = [(n, _json_object(path, n, text)) for n, text in lines]
    if not rows:
        raise ImportFormatError(str(path), "", "the file holds no records")
    columns: dict[str, None] = {}
    for _, r in rows:
        columns.update(dict.fromkeys(r))
    return str(path), rows, list(columns)


# ---------------------------------------------------------------------------------------- mapping


def parse_mapping(items: Sequence[str], fields: Sequence[str], option: str = "--map") -> ColumnMap:
    """``["question=query", ...]`` -> ``{"question": "query"}``; unknown fields and repeats are errors."""
    out: ColumnMap = {}
    for item in items:
        target, sep, column = item.partition("=")
        target, column = target.strip(), column.strip()
        if not sep or not target or not column:
            raise EvalkitError(f"{option} {item!r}: write FIELD=COLUMN, e.g. {option} {fields[1]}=my_column")
        if target not in fields:
            raise EvalkitError(f"{option} {item!r}: unknown field '{target}'{did_you_mean(target, fields)}")
        if target in out:
            raise EvalkitError(f"{option}: field '{target}' mapped twice ('{out[target]}' and '{column}')")
        out[target] = column
    return out


def resolve_columns(label: str, columns: Sequence[str], mapping: ColumnMap, fields: Sequence[str],
                    required: Sequence[str], option: str = "--map") -> ColumnMap:
    """``{field: column}`` for every field found (mapped, or same-named); missing required fields raise."""
    out: ColumnMap = {}
    for f in fields:
        col = mapping.get(f, f)
        if col in columns:
            out[f] = col
        elif f in mapping:
            raise ImportFormatError(label, f, f"{option} {f}={col}: no column '{col}'{did_you_mean(col, columns)}")
        elif f in required:
            raise ImportFormatError(label, f, f"no column '{f}' (columns: {', '.join(columns) or 'none'}); map one "
                                    f"with {option} {f}=COLUMN")
    return out


def _get(row: dict[str, Any], cols: ColumnMap, f: str) -> Any:
    return row.get(cols[f]) if f in cols else None


def _id(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _id_list(value: Any) -> list[str] | None:
    """A list of ids from a list, a tuple, a numpy array, a single id, or None (empty); else None."""
    if value is None:
        return []
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    items = value if isinstance(value, (list, tuple)) else [value]
    ids = [i for i in map(_id, items) if i is not None]
    return None if len(ids) < len(items) else list(dict.fromkeys(ids))


def _grades(value: Any) -> Any:
    """A ``relevance`` cell as ``{doc id: grade}`` without the grades <= 0 (not relevant); other values
    are passed on for the eval set format to refuse, naming the row."""
    value = _jsonable(value)
    if value is None:
        return None
    if not isinstance(value, dict):
        return value
    return {k: v for k, v in value.items()
            if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool) and v <= 0)}


def _tags(value: Any) -> list[Any]:
    """Row tags as a list (a single tag, a list or an array); values are checked by the eval set format."""
    value = _jsonable(value)
    return [] if value is None else list(value) if isinstance(value, list) else [value]


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
