"""The bad-input table: every command of the ``edgestream`` CLI given garbage, with the exit status and a fragment
of the one-line error it must answer with. One source for ``tests/test_bad_input.py`` (which runs every row
through the real CLI in a folder made by :func:`prepare`) and for ``docs/bad-input.md`` (written by
``python tests/bad_inputs.py``; a test checks that the file is what this module writes).

Exit status 2 is a usage error (an option or an input that is wrong), 1 a failure (the work could not be done,
here: an output that cannot be written). ``ACCEPTED`` lists inputs near the edge that are answered with success.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DOC = Path(__file__).resolve().parents[1] / "docs" / "bad-input.md"


@dataclass(frozen=True)
class Case:
    command: str  # as typed after ``edgestream`` (shell quoting)
    code: int  # exit status
    fragment: str  # what the error line (or, for ACCEPTED, the output) contains
    env: tuple = ()  # (name, value) environment variables


def c(command, code, fragment, **env):
    return Case(command, code, fragment, tuple(env.items()))


FIT = "fit good.csv --label label -o m.esm"
BUDGET = "budget --learner tree --board stm32f411 --features 3 --classes 2"
SHRUB_BUDGET = "budget --learner shrubs --board stm32f411 --data good.csv --label label"
SIM = "simulate {} good.csv --label label"
IMAGE = "image shrubs.esm"

SECTIONS: dict[str, list[Case]] = {
    "the command line": [
        c("", 2, "the following arguments are required: COMMAND"),
        c("nosuchcommand", 2, "invalid choice: 'nosuchcommand'"),
        c("--debug", 2, "the following arguments are required: COMMAND"),
        c("fit", 2, "the following arguments are required: DATA.csv, -o/--output"),
        c("fit good.csv -o m.esm", 2, "fit needs --label COL (only a detector, --task anomaly, learns from unlabelled "
          "rows)"),
    ],
    "fit: data files": [
        c("fit missing.csv --label label -o m.esm", 2, "cannot read missing.csv: No such file or directory"),
        c("fit empty.csv --label label -o m.esm", 2, "empty.csv is empty"),
        c("fit blank.csv --label label -o m.esm", 2, "blank.csv is empty"),
        c("fit header_only.csv --label label -o m.esm", 2, "header_only.csv has a header row but no data rows"),
        c("fit ragged.csv --label label -o m.esm", 2, "ragged.csv, line 3: 2 columns, expected 3 like the first row"),
        c("fit text_cell.csv --label label -o m.esm", 2, "text_cell.csv, line 3, column 'f1': non-numeric value 'abc'"),
        c("fit nul.csv --label label -o m.esm", 2, "nul.csv, line 2, column 'f0': non-numeric value"),
        c("fit binary.csv --label label -o m.esm", 2, "cannot read binary.csv: 'utf-8' codec can't decode byte 0xff"),
        c("fit inf.csv --label label -o m.esm", 2, "inf.csv, line 3, column 'f0': value 'inf' is not a finite float32"),
        c("fit huge.csv --label label -o m.esm", 2, "value '1e39' is not a finite float32 (magnitude at most 3.403e+38"),
        c("fit one_column.csv --label label -o m.esm", 2, "one_column.csv has a single column; need at least one feature"),
        c("fit one_class.csv --label label -o m.esm", 2, "the rows hold one class (0); a classifier needs two classes in "
          "the rows it starts on: give rows of another class too, or --classes with every label the stream will carry"),
        c("fit one_class.csv --label label --learner hoeffding --classes 1,2 -o m.esm", 2,
          "label(s) 0 of the rows are not among --classes 1, 2"),
        c("fit one_class.csv --label label --learner hoeffding --classes 0 -o m.esm", 2,
          "--classes gives 1 class(es) (0); a classifier needs at least 2"),
        c("fit one_class.csv --label label --classes 0,1 -o m.esm", 2,
          "--classes gives the labels an online learner may meet later; tree learns in batch the classes of its rows"),
        c("fit one_row.csv --label label -o m.esm", 2, "the data has 1 row(s); training needs at least 2"),
        c("fit missing_label.csv --label label -o m.esm", 2, "missing_label.csv, line 3: missing label in column 'label'"),
        c("fit many_classes.csv --label label --task classification -o m.esm", 2, "y has 300 classes, edgestream supports at most 255"),
        c("fit many_classes.csv --label label --task classification --learner shrubs -o m.esm", 2,
          "300 classes given, ShrubEnsemble needs 2 to 255"),
        c("fit fractions.csv --label label --task classification -o m.esm", 2,
          "--task classification: the label column holds 60 distinct numbers with fractions, not class labels; "
          "predict them with --task regression"),
        c("fit text_target.csv --label label --task regression -o m.esm", 2,
          "the target of row 0 is 'a', not a number: a regressor needs numbers (--task classification for labels)"),
        c("fit inf_target.csv --label label -o m.esm", 2, "the target of row 7 is inf; a regressor needs finite numbers"),
        c("fit fractions.csv --label label --learner hst --task regression -o m.esm", 2,
          "learner 'hst' has no regression form yet; the learners with one: tree, forest, gbdt, shrubs, bls, "
          "hoeffding, irf, axgb"),
        c("fit fractions.csv --label label --learner gbdt --max-leaves 1 -o m.esm", 2,
          "max_leaves=1 must be an integer from 2 to 255"),
        c("fit fractions.csv --label label --learner bls --ram 8KiB --classes 1,2 -o m.esm", 2,
          "--classes lists the labels of a classifier; a regression target has none"),
        c("fit fractions.csv --label label --learner auto -o m.esm", 2,
          "--learner auto chooses by accuracy within a budget: give --ram, --flash or --rate"),
        c("fit text_target.csv --label label --learner bls --task regression -o m.esm", 2,
          "the target of row 0 is 'a', not a number: a regressor needs numbers"),
        c("fit nan_target.csv --label label --learner bls --task regression -o m.esm", 2,
          "nan_target.csv, line 5: missing label in column 'label'"),
        c("fit inf_target.csv --label label --learner bls -o m.esm", 2,
          "the target of row 7 is inf; a regressor needs finite numbers"),
        c("fit text_target.csv --label label --learner hoeffding --task regression -o m.esm", 2,
          "the target of row 0 is 'a', not a number: a regressor needs numbers"),
        c("fit inf_target.csv --label label --learner irf -o m.esm", 2,
          "the target of row 7 is inf; a regressor needs finite numbers"),
        c("fit inf_target.csv --label label --learner axgb -o m.esm", 2,
          "the target of row 7 is inf; a regressor needs finite numbers"),
        c("fit text_target.csv --label label --learner axgb --task regression -o m.esm", 2,
          "the target of row 0 is 'a', not a number: a regressor needs numbers"),
        c("fit fractions.csv --label label --learner hoeffding --propagation -o m.esm", 2,
          "learner 'hoeffding' (regression) has no parameter(s) propagation"),
        c("fit fractions.csv --label label --learner hoeffding --leaf-model cubic -o m.esm", 2,
          "argument --leaf-model: invalid choice: 'cubic' (choose from"),
        c("fit good.csv --label label --learner hoeffding --leaf-model mean -o m.esm", 2,
          "learner 'hoeffding' has no parameter(s) leaf_model"),
        c("fit semicolon.csv --label label -o m.esm", 2,
          "semicolon.csv has one column when split at ',', but its first row holds ';': give the delimiter"),
        c("fit good.csv --label label --delimiter ab -o m.esm", 2, "delimiter 'ab' must be one character"),
        c("fit good.csv --label label --input-dtype int16 -o m.esm", 2,
          "input dtype int16 needs whole-number features; the data has missing or fractional values"),
    ],
    "fit: anomaly detection": [
        c("fit good.csv --task anomaly --false-alarms 0.5 -o m.esm", 2, "false-alarm rate 0.5 is outside (0, 0.5)"),
        c("fit good.csv --task anomaly --false-alarms 0 -o m.esm", 2, "false-alarm rate 0.0 is outside (0, 0.5)"),
        c("fit constant.csv --task anomaly -o m.esm", 2,
          "feature 1 is constant (5.0) over the 3 rows given: a work range needs at least 2 values per feature"),
        c("fit one_row.csv --task anomaly -o m.esm", 2, "1 row(s) given: a work range needs at least 2 rows"),
        c("fit missing_values.csv --label label --task anomaly -o m.esm", 2,
          "missing_values.csv, line 2, column 'f1': a missing value (NaN); hst refuses missing values (the device too: "
          "ES_ERR_INPUT)"),
        c("fit many_classes.csv --label label --task anomaly -o m.esm", 2,
          "the anomaly label of row 2 is 2; a detector's --label column holds 0 (normal) or 1 (anomaly)"),
        c("fit good.csv --task anomaly --learner tree -o m.esm", 2,
          "learner 'tree' has no anomaly form yet; the learners with one: hst, loda"),
        c("fit good.csv --task anomaly --window 5 -o m.esm", 2, "window=5 must be an integer from 10 to 32767"),
        c("fit good.csv --task anomaly --learner loda --n-bins 1 -o m.esm", 2,
          "n_bins=1 must be an integer from 2 to 255"),
        c("fit good.csv --task anomaly --learner loda --n-projections 300 -o m.esm", 2,
          "n_projections=300 must be an integer from 1 to 255"),
        c("fit constant.csv --task anomaly --learner loda -o m.esm", 2,
          "feature 1 is constant (5.0) over the 3 rows given: a work range needs at least 2 values per feature"),
        c("fit missing_values.csv --label label --task anomaly --learner loda -o m.esm", 2,
          "missing_values.csv, line 2, column 'f1': a missing value (NaN); loda refuses missing values (the device "
          "too: ES_ERR_INPUT)"),
        c("fit good.csv --task anomaly --rate 100 --board stm32f411 -o m.esm", 2,
          "--rate and --learner auto choose among classifiers and regressors; a detector is chosen within --ram"),
        c("fit one_class.csv --label label --task anomaly --ram 8KiB --board stm32f411 -o m.esm", 2,
          "2 rows: ranking detectors without labels needs more than 26 (synthetic outliers go after the first 1)"),
        c("fit good.csv --task anomaly --search-rows 100 -o m.esm", 2,
          "--search-rows scores the candidates of a search: give a budget (--ram or --flash)"),
    ],
    "fit, predict, evaluate, simulate: missing values": [
        c("fit missing_values.csv --label label --learner hoeffding -o m.esm", 2,
          "missing_values.csv, line 2, column 'f1': a missing value (NaN); hoeffding refuses missing values (the "
          "device too: ES_ERR_INPUT); learners that take them: tree, forest, gbdt (NaN = missing, goes right at "
          "every split) or shrubs and axgb with --allow-missing (NaN = missing, its own bin)"),
        c("fit missing_values.csv --label label --learner bls -o m.esm", 2,
          "missing_values.csv, line 2, column 'f1': a missing value (NaN); bls refuses missing values"),
        c("fit missing_values.csv --label label --learner shrubs -o m.esm", 2,
          "missing_values.csv, line 2, column 'f1': a missing value (NaN); shrubs refuses missing values unless fit "
          "with --allow-missing"),
        c("fit missing_values.csv --label label --learner axgb --no-allow-missing -o m.esm", 2,
          "axgb refuses missing values unless fit with --allow-missing"),
        c("fit missing_values.csv --label label --ram 8KiB -o m.esm", 2,
          "missing_values.csv, line 2, column 'f1': a missing value (NaN); --learner auto searches learners that "
          "refuse missing values: give --learner tree, forest, gbdt"),
        c("fit missing_values.csv --label label --learner tree --input-dtype int32 -o m.esm", 2,
          "the model takes integer input (int32), which has no missing value"),
        c("fit missing_values.csv --label label --learner hoeffding --allow-missing -o m.esm", 2,
          "--[no-]allow-missing does not apply to --learner hoeffding"),
        c("predict shrubs.esm gaps.csv --label label", 2,
          "gaps.csv, line 4, column 'f1': a missing value (NaN); shrubs refuses missing values unless fit with "
          "--allow-missing"),
        c("evaluate shrubs.esm gaps.csv --label label", 2, "gaps.csv, line 4, column 'f1': a missing value (NaN)"),
        c("simulate shrubs_b gaps.csv --label label --learn", 2,
          "gaps.csv, line 4, column 'f1': a missing value (NaN)"),
    ],
    "stream": [
        c("stream nosuch -o s.csv", 2, "argument STREAM: invalid choice: 'nosuch' (choose from 'agrawal', 'blobs'"),
        c("stream sea --n-samples 0 -o s.csv", 2, "argument --n-samples: '0' is not an integer from 1 to 1000000000"),
        c("stream sea --seed -1 -o s.csv", 2, "argument --seed: '-1' is not an integer >= 0"),
        c("stream sea -o /nonexistent/s.csv", 1, "/nonexistent/s.csv: No such file or directory"),
    ],
    "a bundle given for a model file": [
        c("predict shrubs_b good.csv --label label", 2,
          "shrubs_b is a C bundle, not a model file: its model file is shrubs_b/model.esm; to run the bundle's C code "
          "on a data file: edgestream simulate shrubs_b DATA.csv --label COL"),
        c("evaluate shrubs_b good.csv --label label", 2, "shrubs_b is a C bundle, not a model file"),
        c("export tree_b -o again_b", 2, "tree_b is a C bundle, not a model file: its model file is tree_b/model.esm"),
        c("image shrubs_b --to s.img", 2, "shrubs_b is a C bundle, not a model file"),
    ],
    "fit: the label column and the header": [
        c("fit good.csv --label nope -o m.esm", 2,
          "label column 'nope' does not exist in good.csv; columns: 'f0', 'f1', 'f2', 'label'"),
        c("fit good.csv --label 99 -o m.esm", 2, "label column '99' does not exist in good.csv"),
        c("fit good.csv --label -1 -o m.esm", 2, "label column '-1' does not exist in good.csv"),
        c("fit headerless.csv --label label -o m.esm", 2,
          "it has no header row and 3 columns, so the label must be a 0-based index from 0 to 2 (or give --header"),
        c("fit headerless.csv --label 5 --no-header -o m.esm", 2, "the label must be a 0-based index from 0 to 2"),
        c("fit good.csv --label label --header --no-header -o m.esm", 2,
          "argument --no-header: not allowed with argument --header"),
    ],
    "fit: options": [
        c(f"{FIT} --learner nope", 2, "argument --learner: invalid choice: 'nope'"),
        c(f"{FIT} --input-dtype float64", 2, "argument --input-dtype: invalid choice: 'float64'"),
        c(f"{FIT} --max-depth -3", 2, "max_depth=-3 must be an integer from 0 to 32"),
        c(f"{FIT} --max-depth 100", 2, "max_depth=100 must be an integer from 0 to 32"),
        c(f"{FIT} --max-depth abc", 2, "argument --max-depth: invalid int value: 'abc'"),
        c(f"{FIT} --max-bins 1", 2, "max_bins=1 must be an integer from 2 to 255"),
        c(f"{FIT} --min-samples-leaf 0", 2, "min_samples_leaf=0 must be an integer >= 1"),
        c(f"{FIT} --learner forest --n-trees 0", 2, "n_trees=0 must be an integer from 1 to 255"),
        c(f"{FIT} --n-trees 3", 2, "--n-trees does not apply to --learner tree; its options are --binning"),
        c(f"{FIT} --learner shrubs --window 0", 2, "window_size=0 must be an integer from 1 to 4096"),
        c(f"{FIT} --learner shrubs --window 100000000", 2, "window_size=100000000 must be an integer from 1 to 4096"),
        c(f"{FIT} --learner shrubs --step-size x", 2, "argument --step-size: invalid step_size value: 'x'"),
        c(f"{FIT} --learner shrubs --bins-rows 0", 2, "argument --bins-rows: '0' is not an integer >= 1"),
        c(f"{FIT} --learner bls --feature-nodes -1", 2, "feature_nodes=-1 must be an integer from 1 to 1024"),
        c(f"{FIT} --learner bls --forgetting 2", 2, "forgetting=2.0 must be a number in (0.5, 1]"),
        c(f"{FIT} --learner hoeffding --delta 5", 2, "delta=5.0 must be a number in (0, 1)"),
        c(f"{FIT} --learner hoeffding --drift-threshold 16", 2, "drift_threshold=16 must be an integer from 0 to 15"),
        c(f"{FIT} --learner irf --drift-threshold -1", 2, "drift_threshold=-1 must be an integer from 0 to 15"),
        c(f"{FIT} --learner hoeffding --work-per-call 70000", 2,
          "work_per_call=70000 must be an integer from 0 to 65535"),
        c(f"{FIT} --learner axgb --adwin-delta 2", 2, "delta must be in (0, 1), got 2.0"),
        c(f"{FIT} --learner axgb --window-min 64 --window-max 8", 2, "window_min=64 must not exceed window_max=8"),
        c(f"{FIT} --learner gbdt --alpha 3", 2, "alpha=3.0 must be a number in [0.0, 1.0]"),
    ],
    "fit: budgets and outputs": [
        c(f"{FIT} --ram 0", 2, "argument --ram: '0' is not a byte size; use a positive whole number of bytes"),
        c(f"{FIT} --ram -5", 2, "argument --ram: '-5' is not a byte size"),
        c(f"{FIT} --ram '8 KBs'", 2, "argument --ram: '8 KBs' is not a byte size"),
        c(f"{FIT} --ram 2048GiB", 2, "argument --ram: '2048GiB' is not a byte size; use a positive whole number of "
          "bytes up to 1024 GiB"),
        c(f"{FIT} --flash 0", 2, "argument --flash: '0' is not a byte size"),
        c(f"{FIT} --ram 8KiB --board nope", 2, "unknown board 'nope'; known boards: atmega2560, atmega328p, esp32c3"),
        c(f"{FIT} --ram 8KiB --board bad_board.toml", 2,
          "board file bad_board.toml: field 'ram_bytes' must be positive, got -1"),
        c(f"{FIT} --ram 8KiB --board not_toml.toml", 2, "board file not_toml.toml is not valid TOML"),
        c(f"{FIT} --ram 8KiB --board bad_isa.toml", 2,
          "board file bad_isa.toml: field 'arch' must be one of armv6-m, armv7e-m, armv6, armv8-a, avr5, avr6, "
          "rv32imc, rv32imac, got 'rv32gc'"),
        c(f"{FIT} --ram 8KiB --board bad_abi.toml", 2,
          "board file bad_abi.toml: field 'abi' must be one of ilp32 for RISC-V, got 'ilp32d'"),
        c(f"{FIT} --ram 8KiB --board tiny_ram.toml", 2,
          "board file tiny_ram.toml: field 'ram_bytes' must be at least the runtime's minimum of 128 bytes, got 64"),
        c(f"{FIT} --learner shrubs --ram 4KiB --board atmega328p", 2,
          "a RAM budget of 4,096 bytes exceeds atmega328p's 2,048 bytes"),
        c(f"{FIT} --learner shrubs --ram 8KiB --workers 0", 2,
          "argument --workers: '0' is not an integer from 1 to 1024"),
        c(f"{FIT} --learner shrubs --ram 8KiB --workers many", 2,
          "argument --workers: 'many' is not an integer from 1 to 1024"),
        c(f"{FIT} --learner shrubs --ram 8KiB --rate -3", 2, "argument --rate: '-3' is not a number > 0"),
        c(f"{FIT} --learner shrubs --rate nan", 2, "argument --rate: 'nan' is not a number > 0"),
        c(f"{FIT} --learner shrubs --rate inf", 2, "argument --rate: 'inf' is not a number > 0"),
        c(f"{FIT} --learner tree --rate 5", 2, "--rate applies to online learners; tree learns in batch"),
        c(f"{FIT} --ram 8KiB --rate 1e7", 2, "--rate 1e+07: no candidate that fits the budget learns 1e+07 samples/s "
          "on stm32f411 (100 MHz: 10 instructions per sample); the fastest, "),
        c(f"{FIT} --learner shrubs --ram 8KiB --rate-mean", 2, "--rate-mean plans a --rate on the mean calls: give "
          "--rate"),
        c(f"{FIT} --learner auto", 2, "--learner auto chooses by accuracy within a budget: give --ram, --flash or"),
        c(f"{FIT} --ram 8KiB --max-depth 3", 2, "--max-depth need(s) a --learner: auto searches every online"),
        c(f"{FIT} --ram 100 --board atmega328p", 2, "no configuration of any online learner fits atmega328p with 100 "
          "bytes of RAM; the smallest of each: shrubs"),
        c(f"{FIT} --ram 8KiB --search-rows 10", 2, "--search-rows 10 is below the 300 rows the learners start on"),
        c(f"{FIT} --ram 8KiB --search-rows 1", 2, "argument --search-rows: '1' is not an integer >= 2"),
        c(f"{FIT} --learner tree --search-rows 50", 2, "--search-rows scores the candidates of a search"),
        c("fit good.csv --label label -o /nonexistent/dir/m.esm", 2,
          "cannot write model file /nonexistent/dir/m.esm: No such file or directory"),
        c("fit good.csv --label label -o tree_b", 2, "cannot write model file tree_b: Is a directory"),
    ],
    "export": [
        c("export missing.esm -o out", 2, "cannot read model file missing.esm: No such file or directory"),
        c("export good.csv -o out", 2, "good.csv is not an edgestream model file (it does not start with"),
        c("export corrupt.esm -o out", 2, "corrupt model file corrupt.esm: the header line is incomplete"),
        c("export flipped.esm -o out", 2, "corrupt model file flipped.esm: payload checksum mismatch"),
        c("export future.esm -o out", 2, "model file future.esm has format_version 99; this edgestream supports"),
        c("export bad_params.esm -o out", 2, "invalid model file bad_params.esm: max_depth=-3 must be an integer"),
        c("export bad_saturated.esm -o out", 2, "invalid model file bad_saturated.esm: saturated=-1 must be a count "
          "of rows (an integer >= 0)"),
        c("export tree.esm -o out --name 1abc", 2, "bundle name '1abc' must be a lowercase C identifier"),
        c("export tree.esm -o out --name int", 2, "bundle name 'int' must be a lowercase C identifier (letters, "
          "digits, _), not a C keyword"),
        c("export tree.esm -o out --name Model", 2, "bundle name 'Model' must be a lowercase C identifier"),
        c("export tree.esm -o out --name main", 2, "bundle name 'main' must be"),
        c("export tree.esm -o out --name es_x", 2, "bundle name 'es_x' must be"),
        c("export tree.esm -o out --name ''", 2, "bundle name '' must be"),
        c("export tree.esm -o out --optimize fast", 2, "argument --optimize: invalid choice: 'fast'"),
        c("export tree.esm -o good.csv", 2, "cannot export to good.csv: it exists and is not a directory"),
        c("export tree.esm -o user_project", 2, "cannot export to user_project: it holds Makefile, which edgestream "
          "did not write"),
        c("export tree.esm", 2, "the following arguments are required: -o/--output"),
    ],
    "simulate: bundles": [
        c(SIM.format("missing_b"), 2, "missing_b is not an edgestream bundle (no edgestream.json)"),
        c(SIM.format("tree.esm"), 2, "tree.esm is a file, not an edgestream bundle directory"),
        c(SIM.format("b_no_header"), 2, "bundle b_no_header is incomplete: src/model.h is missing"),
        c(SIM.format("b_changed_header"), 2, "bundle b_changed_header: src/model.h differs from the file edgestream "
          "wrote"),
        c(SIM.format("b_not_json"), 2, "b_not_json/edgestream.json is not valid JSON"),
        c(SIM.format("b_format"), 2, "bundle b_format has format_version 2; this edgestream reads format_version 3"),
        c(SIM.format("b_bad_name"), 2, "manifest name 'not valid' is not a C identifier"),
        c(SIM.format("b_keyword_name"), 2, "manifest name 'int' is not a C identifier"),
        c(SIM.format("b_wrong_type"), 2, "manifest field 'n_features' is '3', expected a JSON integer"),
        c(SIM.format("b_learning_type"), 2, "manifest field 'learning' is 'yes', expected a JSON boolean"),
        c(SIM.format("b_no_files"), 2, "manifest field 'files' is missing, expected a JSON object"),
        c(SIM.format("b_learner"), 2, "unknown learner 'nope'; the learners are: tree, forest"),
        c(SIM.format("b_classes"), 2, "manifest n_classes=1 must be an integer from 2 to 255"),
        c(SIM.format("b_features"), 2, "manifest n_features=0 must be an integer from 1 to 255"),
        c(SIM.format("b_dtype"), 2, "manifest input_dtype 'float64' must be one of float32, int32, int16"),
        c(SIM.format("b_class_names"), 2, "manifest class_names must be 2 strings (n_classes)"),
        c(SIM.format("b_escape"), 2, "manifest sources '../../outside.c' is not one of the bundle's files"),
        c(SIM.format("b_escape_files"), 2, "manifest files entry '../outside.c'"),
        c(SIM.format("b_include"), 2, "manifest include_dir '/usr/include' is not a folder of the bundle's files"),
        c(SIM.format("b_other_model"), 2, "bundle b_other_model: model.esm differs from the file edgestream wrote"),
        c(SIM.format("b_other_model_rehashed"), 2, "model.esm is not the model the bundle was exported from"),
        c(SIM.format("b_other_model_relabelled"), 2, "model.esm holds another model than the bundle's C code: "
          "learner 'shrubs' (manifest 'tree')"),
    ],
    "simulate: options and data": [
        c("simulate tree_b ints.csv --label label", 2, "the data has 1 features, bundle tree_b takes 3"),
        c("simulate tree_b missing.csv --label label", 2, "cannot read missing.csv: No such file or directory"),
        c("simulate tree_b good.csv", 2, "the following arguments are required: --label"),
        c(f"{SIM.format('tree_b')} --learn", 2, "--learn needs a learning bundle; tree_b holds a frozen tree model"),
        c(f"{SIM.format('tree_b')} --target qemu", 2, "--target qemu needs --board (see edgestream boards)"),
        c(f"{SIM.format('tree_b')} --target qemu --board no_io.toml", 2,
          "board stm32f411 has no emulated file I/O; it can be built, not run (boards that run: atmega2560, atmega328p"),
        c(f"{SIM.format('tree_b')} --target qemu --board nope", 2, "unknown board 'nope'"),
        c(f"{SIM.format('tree_b')} --target qemu --board no_qemu.toml", 1,
          "no-qemu-system-riscv32 (needed for board esp32c3) is not installed; install the Debian package(s) "
          "qemu-system-misc"),
        c(f"{SIM.format('tree_b')} --target qemu --board unknown_field.toml", 2,
          "board file unknown_field.toml: unknown field 'speed'"),
        c(f"{SIM.format('tree_b')} --board stm32f411", 2, "--board applies to --target qemu only"),
        c(f"{SIM.format('tree_b')} --instructions", 2,
          "--instructions counts what an emulator executes: give --target qemu and a --board"),
        c(f"{SIM.format('tree_b')} --target gpu", 2, "argument --target: invalid choice: 'gpu'"),
        c(f"{SIM.format('tree_b')} --timeout 0", 2, "argument --timeout: '0' is not a number > 0 and <= 86400"),
        c(f"{SIM.format('tree_b')} --timeout -1", 2, "argument --timeout: '-1' is not a number > 0"),
        c(f"{SIM.format('tree_b')} --timeout 1e9", 2, "argument --timeout: '1e9' is not a number > 0 and <= 86400"),
        c(f"{SIM.format('shrubs_b')} --learn --window 0", 2, "argument --window: '0' is not an integer >= 1"),
        c("simulate gbdt_reg_b text_target.csv --label label --target qemu --board stm32f411", 2,
          "the target of row 0 is 'a', not a number: a regressor needs numbers"),
        c("simulate gbdt_reg_b fractions.csv --label label --learn --target qemu --board stm32f411", 2,
          "--learn needs a learning bundle; gbdt_reg_b holds a frozen gbdt model"),
    ],
    "evaluate": [
        c("evaluate tree.esm good.csv --label label", 2, "a tree model does not learn row by row; test-then-train "
          "needs an online learner"),
        c("evaluate shrubs.esm ints.csv --label label", 2, "the data has 1 features, the model takes 3"),
        c("evaluate shrubs.esm other_labels.csv --label label", 2, "label(s) 7 are not among the model's classes"),
        c("evaluate good.csv good.csv --label label", 2, "good.csv is not an edgestream model file"),
        c("evaluate shrubs.esm good.csv --label label --window 0", 2, "argument --window: '0' is not an integer >= 1"),
        c("evaluate shrubs.esm good.csv --label label --window x", 2, "argument --window: 'x' is not an integer"),
        c("evaluate shrubs.esm good.csv", 2, "the following arguments are required: --label"),
    ],
    "update": [
        c("update tree.esm --delete 1", 2, "a TreeClassifier cannot add or delete training rows in place"),
        c("update gbdt.esm", 2, "nothing to do: give --add DATA.csv --label COL and/or --delete ROWS"),
        c("update gbdt.esm --delete 99999", 2, "row 99999 does not exist: row numbers go from 0 to 99"),
        c("update gbdt.esm --delete abc", 2, "row numbers must be integers, got 'abc'"),
        c("update gbdt.esm --delete 1,1", 2, "row 1 is listed 2 times"),
        c("update gbdt.esm --delete ,", 2, "no row numbers in ','"),
        c("update gbdt.esm --add good.csv", 2, "--add and --label go together"),
        c("update gbdt.esm --add ints.csv --label label", 2, "X has 1 features, but OnlineGBDTClassifier is "
          "expecting 3 features"),
        c("update gbdt.esm --add other_labels.csv --label label", 2, "label 7 is not a class of this model"),
        c("update gbdt_reg.esm --add text_target.csv --label label", 2,
          "the target of row 0 is 'a', not a number: a regressor needs numbers"),
        c("update gbdt_reg.esm --add inf_target.csv --label label", 2,
          "the target of row 7 is inf; a regressor needs finite numbers"),
        c("update gbdt_reg.esm --add good.csv --label label", 2,
          "X has 3 features, but OnlineGBDTRegressor is expecting 1 features"),
        c("update missing.esm --delete 1", 2, "cannot read model file missing.esm"),
    ],
    "image": [
        c(IMAGE, 2, "nothing to do: give --from IMAGE -o MODEL2 and/or --to IMAGE"),
        c("image tree.esm --to x.img", 2, "a tree model keeps no learning state on the device: it has no state images"),
        c(f"{IMAGE} --to x.img --sequence -1", 2, "argument --sequence: '-1' is not an integer from 0 to 4294967295"),
        c(f"{IMAGE} --to x.img --sequence 4294967296", 2, "argument --sequence: '4294967296' is not an integer"),
        c(f"{IMAGE} --from shrubs.img", 2, "--from IMAGE and -o MODEL2 go together"),
        c(f"{IMAGE} --from missing.img -o y.esm", 2, "cannot read state image missing.img: No such file or directory"),
        c(f"{IMAGE} --from good.csv -o y.esm", 2, "good.csv: not an edgestream state image (magic"),
        c(f"{IMAGE} --from empty.img -o y.esm", 2, "empty.img: state image of 0 bytes: shorter than its 24-byte header"),
        c(f"{IMAGE} --from torn.img -o y.esm", 2, "torn.img: state image of 100 bytes (its header says"),
        c(f"{IMAGE} --from flipped.img -o y.esm", 2, "flipped.img: state image CRC-32"),
        c(f"{IMAGE} --from other.img -o y.esm", 2, "other.img: state image of another model (model hash"),
        c(f"{IMAGE} --from other_size.img -o y.esm", 2, "other_size.img: state image of 360 bytes (its header says "
          "360); this model's images have 856 bytes"),
        c("image tree.esm --from shrubs.img -o y.esm", 2, "a tree model keeps no learning state on the device"),
        c(f"{IMAGE} --to /nonexistent/x.img", 1, "cannot write state image /nonexistent/x.img: No such file"),
    ],
    "budget": [
        c("budget --learner tree --board stm32f411 --features 3", 2, "--classes needed (or --data and --label"),
        c(f"{BUDGET} --max-depth -3", 2, "max_depth=-3 must be an integer from 0 to 32"),
        c(f"{BUDGET} --max-depth 1000", 2, "max_depth=1000 must be an integer from 0 to 32"),
        c(f"{BUDGET} --max-bins 1000", 2, "max_bins=1000 must be an integer from 2 to 255"),
        c(f"{BUDGET} --min-samples-leaf 0", 2, "min_samples_leaf=0 must be an integer >= 1"),
        c("budget --learner forest --board stm32f411 --features 3 --classes 2 --n-trees 100000", 2,
          "n_trees=100000 must be an integer from 1 to 255"),
        c("budget --learner shrubs --board stm32f411 --features 3 --classes 2 --n-trees 3", 2,
          "--n-trees does not apply to --learner shrubs"),
        c("budget --learner tree --board stm32f411 --features 0 --classes 2", 2,
          "argument --features: '0' is not an integer from 1 to 255"),
        c("budget --learner tree --board stm32f411 --features 300 --classes 2", 2,
          "argument --features: '300' is not an integer from 1 to 255"),
        c("budget --learner tree --board stm32f411 --features abc --classes 2", 2,
          "argument --features: 'abc' is not an integer from 1 to 255"),
        c("budget --learner tree --board stm32f411 --features 3 --classes 1", 2,
          "argument --classes: '1' is not an integer from 2 to 255"),
        c("budget --learner tree --board stm32f411 --features 3 --classes 1000", 2,
          "argument --classes: '1000' is not an integer from 2 to 255"),
        c(f"{BUDGET} --ram 0", 2, "argument --ram: '0' is not a byte size"),
        c(f"{BUDGET} --flash -1", 2, "argument --flash: '-1' is not a byte size"),
        c(f"{BUDGET} --ram 100GiB", 2, "a RAM budget of 107,374,182,400 bytes exceeds stm32f411's 131,072 bytes"),
        c(f"{BUDGET} --flash 10GiB", 2, "a flash budget of 10,737,418,240 bytes exceeds stm32f411's 524,288 bytes"),
        c("budget --learner tree --board nope --features 3 --classes 2", 2, "unknown board 'nope'"),
        c("budget --learner tree --board bad_board.toml --features 3 --classes 2", 2,
          "field 'ram_bytes' must be positive"),
        c(f"{BUDGET} --optimize fast", 2, "argument --optimize: invalid choice: 'fast'"),
        c(f"{BUDGET} --measured missing.json", 2,
          "--measured missing.json: cannot read it: No such file or directory"),
        c(f"{BUDGET} --measured good.csv", 2,
          "--measured good.csv: not the JSON of simulate --instructions --json (no instructions counted)"),
        c(f"{BUDGET} --data good.csv", 2, "--data and --label go together"),
        c(f"{BUDGET} --rate 5", 2, "--rate chooses among configurations by their accuracy on data"),
        c("budget --board stm32f411 --features 3 --classes 2", 2,
          "--learner auto chooses by accuracy on data: give --data and --label, or a --learner"),
        c("budget --learner shrubs --board stm32f411 --data empty.csv --label label", 2, "empty.csv is empty"),
        c("budget --learner shrubs --board stm32f411 --data ints.csv --label label --features 5", 2,
          "--features 5 disagrees with ints.csv, which has 1 features"),
        c("budget --learner hst --board stm32f411 --features 3 --classes 2 --ram 8KiB", 2,
          "--classes 2: a detector (hst) scores one number and has no classes"),
        c(f"{SHRUB_BUDGET} --workers 0", 2, "argument --workers: '0' is not an integer from 1 to 1024"),
        c(f"{SHRUB_BUDGET} --workers -2", 2, "argument --workers: '-2' is not an integer from 1 to 1024"),
        c(f"{SHRUB_BUDGET} --rate 0", 2, "argument --rate: '0' is not a number > 0"),
        c(f"{SHRUB_BUDGET} --bins-rows -1", 2, "argument --bins-rows: '-1' is not an integer >= 1"),
        c(f"{BUDGET} --bundle missing_b", 2, "missing_b is not an edgestream bundle (no edgestream.json)"),
        c(f"{BUDGET} --bundle b_no_header", 2, "bundle b_no_header is incomplete: src/model.h is missing"),
        c(f"{BUDGET} --bundle b_bad_name", 2, "manifest name 'not valid' is not a C identifier"),
    ],
    "build": [
        c("build", 2, "the following arguments are required: BUNDLE_DIR, --board"),
        c("build tree_b", 2, "the following arguments are required: --board"),
        c("build tree_b --board nope", 2, "unknown board 'nope'"),
        c("build tree_b --board not_toml.toml", 2, "board file not_toml.toml is not valid TOML"),
        c("build tree_b --board unknown_field.toml", 2, "unknown field 'speed'"),
        c("build missing_b --board stm32f411", 2, "missing_b is not an edgestream bundle"),
        c("build tree.esm --board stm32f411", 2, "tree.esm is a file, not an edgestream bundle directory"),
        c("build b_bad_name --board stm32f411", 2, "manifest name 'not valid' is not a C identifier"),
        c("build b_changed_header --board stm32f411", 2, "src/model.h differs from the file edgestream wrote"),
        c("build b_escape --board stm32f411", 2, "manifest sources '../../outside.c' is not one of the bundle's files"),
    ],
    "import and predict": [
        c("import missing.txt -o i.esm", 2, "cannot read missing.txt: No such file or directory"),
        c("import good.csv -o i.esm", 2, "good.csv is not a model file edgestream imports (a LightGBM model text file"),
        c("import forest.joblib -o i.esm", 2, "forest.joblib is a pickle or joblib file, and loading one runs code"),
        c("import quantile.joblib -o i.esm --trust-pickle", 2,
          "GradientBoostingRegressor loss 'quantile': edgestream imports regressors of loss squared_error"),
        c("import poisson.joblib -o i.esm --trust-pickle", 2,
          "HistGradientBoostingRegressor loss 'poisson': edgestream imports regressors of loss squared_error"),
        c("import logistic.joblib -o i.esm --trust-pickle", 2,
          "cannot import a sklearn.linear_model._logistic.LogisticRegression; supported: scikit-learn"),
        c("import categorical.joblib -o i.esm --trust-pickle", 2,
          "HistGradientBoostingClassifier with categorical features: edgestream imports numerical splits only"),
        c("import wide.joblib -o i.esm --trust-pickle", 2,
          "DecisionTreeClassifier has 300 features; edgestream takes 1 to 255"),
        c("import iforest_wide.joblib -o i.esm --trust-pickle", 2,
          "IsolationForest has 300 features; edgestream takes 1 to 255"),
        c("import iforest_one.joblib -o i.esm --trust-pickle", 2,
          "IsolationForest with max_samples=1: every path length is 0, no score can be computed"),
        c("import iforest.joblib -o i.esm --trust-pickle --false-alarms 0.7 --calibrate good.csv --label label", 2,
          "false-alarm rate 0.7 is outside (0, 0.5)"),
        c("import iforest.joblib -o i.esm --trust-pickle --false-alarms 0.01", 2,
          "--false-alarms RATE and --calibrate DATA.csv go together"),
        c("import forest.joblib -o i.esm --trust-pickle --false-alarms 0.01 --calibrate good.csv --label label", 2,
          "--false-alarms and --calibrate set a detector's threshold; a RandomForestClassifier is not a detector"),
        c("import iforest.joblib -o i.esm --trust-pickle --false-alarms 0.01 --calibrate missing.csv", 2,
          "cannot read missing.csv: No such file or directory"),
        c("import many_classes.joblib -o i.esm --trust-pickle", 2,
          "DecisionTreeClassifier has 300 classes; edgestream takes 2 to 255"),
        c("import lgb_linear.txt -o i.esm", 2, "LightGBM model with linear trees: edgestream imports constant leaves"),
        c("import lgb_huber.txt -o i.esm", 2,
          "LightGBM objective 'huber': edgestream imports binary, multiclass, multiclassova, regression"),
        c("import xgb_poisson.json -o i.esm", 2,
          "XGBoost objective 'count:poisson': edgestream imports binary:logistic, binary:logitraw, multi:softprob, "
          "multi:softmax, reg:squarederror"),
        c("import torn_xgb.json -o i.esm", 2, "torn_xgb.json looks like an XGBoost model but cannot be read"),
        c("predict tree.esm good.csv", 2, "the data has 4 feature columns, the model takes 3"),
        c("predict tree.esm good.csv --label nope", 2, "label column 'nope' does not exist in good.csv"),
    ],
    "boards, cache, demo": [
        c("boards --json extra", 2, "unrecognized arguments: extra"),
        c("boards --ram 8KiB", 2, "unrecognized arguments: --ram 8KiB"),
        c("cache bogus", 2, "argument action: invalid choice: 'bogus' (choose from 'info', 'clear')"),
        c("cache", 2, "EDGESTREAM_CACHE_LIMIT='lots': 'lots' is not a byte size", EDGESTREAM_CACHE_LIMIT="lots"),
        c("demo --n-samples 0", 2, "argument --n-samples: '0' is not an integer from 1 to 1000000000"),
        c("demo --n-samples many", 2, "argument --n-samples: 'many' is not an integer"),
        c("demo --ram 0", 2, "argument --ram: '0' is not a byte size"),
        c("demo --qemu-rows -1", 2, "argument --qemu-rows: '-1' is not an integer >= 1"),
        c("demo --learner tree", 2, "argument --learner: invalid choice: 'tree'"),
        c("demo --stream nope", 2, "argument --stream: invalid choice: 'nope'"),
        c("demo --board nope --out demo_out", 2, "unknown board 'nope'"),
    ],
}

CASES: list[Case] = [case for cases in SECTIONS.values() for case in cases]

# The Python API: (call, a fragment of its ValueError), evaluated with the names of API_NAMES in the same folder.
API: list[tuple[str, str]] = [
    ("plan('tree', load_board('stm32f411'), 0, 2)", "features=0 must be an integer from 1 to 255"),
    ("plan('tree', load_board('stm32f411'), 3, 1000)", "classes=1000 must be an integer from 2 to 255"),
    ("plan('tree', load_board('stm32f411'), 3, 2, ram=-1)", "ram=-1 must be an integer from 1 to"),
    ("plan('tree', load_board('stm32f411'), 3, 2, max_depth=-3)", "max_depth=-3 must be an integer from 0 to 32"),
    ("plan('tree', load_board('stm32f411'), True, 2)", "features=True must be an integer"),
    ("get('tree').make(max_bins=1000)", "max_bins=1000 must be an integer from 2 to 255"),
    ("search('shrubs', load_board('stm32f411'), *make_stream('sea', 50), workers=0)",
     "workers=0 must be an integer from 1 to 1024"),
    ("search('shrubs', load_board('stm32f411'), *make_stream('sea', 50), rate=float('nan'))",
     "rate=nan must be a number > 0"),
    ("make_stream('sea', 0)", "n_samples=0 must be an integer from 1 to 1000000000"),
    ("prequential(load_model('shrubs.esm'), *make_stream('sea', 10), window=0)", "window=0 must be an integer >= 1"),
    ("write_image(load_model('shrubs.esm'), sequence=2**32)", "sequence=4294967296 must be an integer from 0 to"),
    ("parse_bytes('0')", "'0' is not a byte size"),
    ("load_csv('numeric_only_header.csv', 'label')", "label column 'label' does not exist"),
    ("load_csv('good.csv', 'label', no_header=True, header=True)", "header and no_header exclude each other"),
    ("read_manifest('b_wrong_type')", "manifest field 'n_features' is '3', expected a JSON integer"),
    ("export_bundle(load_model('tree.esm'), 'out', name='for')", "bundle name 'for' must be"),
    ("target('tree_b', 'qemu', 'no_io.toml')", "board stm32f411 has no emulated file I/O"),
    ("target('tree_b', 'qemu', 'stm32f411', timeout=-1)", "timeout=-1 must be a number > 0 and <= 86400"),
]
API_NAMES = ("from edgestream.budget import plan\n"
             "from edgestream.boards import load_board\n"
             "from edgestream.learners import get\n"
             "from edgestream.search import search\n"
             "from edgestream.data import load_csv, make_stream\n"
             "from edgestream.evaluate import prequential\n"
             "from edgestream.checkpoint import write_image\n"
             "from edgestream.units import parse_bytes\n"
             "from edgestream.export import export_bundle, read_manifest\n"
             "from edgestream.modelfile import load_model\n"
             "from edgestream.parity import target\n")

ACCEPTED: list[Case] = [
    c("fit numeric_header.csv --label label -o m.esm", 0, "trained tree on 60 rows, 3 features, 2 classes"),
    c("fit numeric_header.csv --label 3 -o m.esm", 0, "trained tree on 60 rows, 3 features, 2 classes"),
    c("fit numeric_only_header.csv --label 3 --header -o m.esm", 0, "trained tree on 60 rows, 3 features, 2 classes"),
    # without --header a header of numbers only is a row of data (and its label 3 a class): the rule's one gap
    c("fit numeric_only_header.csv --label 3 -o m.esm", 0, "trained tree on 61 rows, 3 features, 3 classes"),
    c("fit headerless.csv --label 2 -o m.esm", 0, "trained tree on 60 rows, 2 features, 2 classes"),
    c("fit missing_values.csv --label label -o m.esm", 0, "trained tree on 4 rows, 2 features, 2 classes"),
    c("stream sea --n-samples 10 -o s.csv", 0, "10 rows, 3 features x0..x2, label y (2 classes) -> s.csv"),
    c("fit missing_values.csv --label label --learner forest -o m.esm", 0,
      "3 missing values in 3 rows: NaN = missing, goes right at every split (on the host and the device)"),
    c("fit missing_values.csv --label label --learner shrubs --allow-missing -o m.esm", 0,
      "3 missing values in 3 rows: NaN = missing, its own bin (on the host and the device)"),
    c("fit good.csv --label label --learner forest --n-trees 2 -o m.esm", 0,
      "a frozen model: forest predicts on the device but does not learn there; for a model that keeps learning give "
      "a RAM budget (--ram 8KiB"),
    # a target beyond the range fitted on the first rows saturates, counted, never wrapped
    c("fit far_target.csv --label label --learner bls --bins-rows 20 -o m.esm", 0, "(36 targets saturated)"),
    c("import forest.joblib --trust-pickle -o i.esm", 0, "imported 3 features, 2 classes"),
    c("import xgb.json -o i.esm", 0, "imported 3 features, 2 classes"),
    # a target beyond the range the regressor's scale was fitted on is saturated and counted, never wrapped
    c("update gbdt_reg.esm --add far_rows.csv --label label", 0,
      "added 2 rows (row numbers 60..61) (1 targets outside the model's range"),
    c("import regressor.joblib --trust-pickle -o i.esm", 0, "imported 3 features, a regressor within"),
    c("import xgb_regression.json -o i.esm", 0, "imported 3 features, a regressor within"),
    # simavr traces no instructions: on AVR the firmware measures CPU cycles with Timer1 instead
    c(f"{SIM.format('tree_b')} --target qemu --board atmega328p --instructions", 0,
      "CPU cycles per call, measured by Timer1 under simavr: predict_proba mean"),
]

# Files of the folder the commands run in, besides those prepare() makes from fitted models.
TEXT_FILES = {
    "empty.csv": "",
    "blank.csv": "\n\n  \n",
    "header_only.csv": "f0,f1,label\n",
    "ragged.csv": "f0,f1,label\n1,2,0\n3,0\n",
    "text_cell.csv": "f0,f1,label\n1,2,0\n3,abc,1\n",
    "nul.csv": "f0,label\n1\0,0\n2,1\n",
    "inf.csv": "f0,label\n1,0\ninf,1\n2,0\n",
    "huge.csv": "f0,label\n1,0\n1e39,1\n2,0\n",
    "one_column.csv": "label\n0\n1\n",
    "one_class.csv": "f0,label\n1,0\n2,0\n",
    "one_row.csv": "f0,label\n1,0\n",
    "constant.csv": "f0,f1\n1,5\n2,5\n3,5\n",
    "missing_label.csv": "f0,label\n1,0\n2,\n",
    "missing_values.csv": "f0,f1,label\n1,,0\n?,2,1\n3,NA,0\n4,5,1\n",
    "gaps.csv": "f0,f1,f2,label\n1,2,3,0\n4,5,6,1\n7,,9,0\n",
    "semicolon.csv": "f0;f1;label\n1;2;0\n3;4;1\n",
    "many_classes.csv": "f0,label\n" + "".join(f"{i},{i % 300}\n" for i in range(600)),
    "fractions.csv": "f0,label\n" + "".join(f"{i},{i * 0.37:.2f}\n" for i in range(60)),
    "text_target.csv": "f0,label\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(60)),
    "inf_target.csv": "f0,label\n" + "".join(f"{i},{'inf' if i == 7 else i * 0.5}\n" for i in range(60)),
    "far_target.csv": "f0,label\n" + "".join(f"{i},{i * 0.5 if i < 40 else 1e6}\n" for i in range(60)),
    "nan_target.csv": "f0,label\n" + "".join(f"{i},{'nan' if i == 3 else i * 0.5}\n" for i in range(60)),
    "ints.csv": "f0,label\n" + "".join(f"{i},{i % 2}\n" for i in range(60)),
    "far_rows.csv": "f0,label\n3,1.5\n4,1e6\n",
    "headerless.csv": "".join(f"{i}.5,{i % 7},{i % 2}\n" for i in range(60)),
    "bad_board.toml": "",  # made from a built-in profile in prepare()
    "not_toml.toml": "name = [unclosed\n",
    "unknown_field.toml": "",  # made from a built-in profile in prepare()
    "no_io.toml": "",  # made from a built-in profile in prepare()
    "bad_isa.toml": "",  # made from a built-in profile in prepare()
    "bad_abi.toml": "",  # made from a built-in profile in prepare()
    "tiny_ram.toml": "",  # made from a built-in profile in prepare()
    "no_qemu.toml": "",  # made from a built-in profile in prepare()
}
BINARY_FILES = {"binary.csv": b"f0,label\n\xff\xfe1,0\n2,1\n", "empty.img": b""}

FILE_NOTES = {
    "good.csv": "300 rows of the SEA stream: features f0, f1, f2 and a 0/1 label",
    "numeric_header.csv": "60 rows under the header 0,1,2,label (numeric feature names)",
    "numeric_only_header.csv": "60 rows under the header 0,1,2,3 (the label column is named 3)",
    "other_labels.csv": "good.csv with label 7, a class the models do not know, in one row",
    "tree.esm, shrubs.esm, gbdt.esm": "a tree, a shrub ensemble (window 32) and an online GBDT fitted on good.csv "
                                      "(gbdt on its first 100 rows)",
    "gbdt_reg.esm": "an online GBDT regressor fitted on fractions.csv",
    "corrupt.esm, flipped.esm": "tree.esm cut after 100 bytes; tree.esm with its last byte changed",
    "future.esm, bad_params.esm": "tree.esm whose header says format_version 99; tree.esm whose header says "
                                  "max_depth -3",
    "bad_saturated.esm": "gbdt_reg.esm whose header says saturated -1",
    "tree_b, shrubs_b, gbdt_reg_b": "the bundles of tree.esm, shrubs.esm and gbdt_reg.esm",
    "b_*": "copies of tree_b, each broken in one way its name tells (b_other_model: model.esm of shrubs_b; "
           "_rehashed: with its hash in files; _relabelled: also with its SHA-256 as model_sha256)",
    "shrubs.img, other.img, other_size.img": "a state image of shrubs.esm; one of a shrub model of the same size "
                                             "that learned other rows; one of a smaller shrub model",
    "torn.img, flipped.img": "the first 100 bytes of shrubs.img; shrubs.img with a changed byte",
    "user_project": "a folder with the user's own Makefile",
    "bad_board.toml, unknown_field.toml": "stm32f411's profile with ram_bytes = -1; with an unknown field speed",
    "no_io.toml": "stm32f411's profile with io = \"none\" (a board that can be built, not run)",
    "bad_isa.toml, bad_abi.toml, tiny_ram.toml": "gd32vf103's profile with arch = \"rv32gc\"; with abi = \"ilp32d\"; "
                                                 "with ram_bytes = 64",
    "no_qemu.toml": "esp32c3's profile whose emulator command is no-qemu-system-riscv32 (QEMU not installed)",
    "forest.joblib, regressor.joblib, logistic.joblib": "scikit-learn models fitted on good.csv, saved with joblib: a "
                                                        "random forest, a regression tree, a logistic regression",
    "quantile.joblib, poisson.joblib": "scikit-learn regressors fitted on good.csv: gradient boosting of the quantile "
                                       "loss, histogram gradient boosting of the Poisson loss",
    "categorical.joblib": "a HistGradientBoostingClassifier fitted on good.csv with f0 as a categorical feature",
    "wide.joblib, many_classes.joblib": "decision trees fitted on 300 features; on many_classes.csv",
    "iforest.joblib, iforest_wide.joblib, iforest_one.joblib": "isolation forests fitted on good.csv; on 300 "
                                                               "features; with max_samples=1",
    "lgb_linear.txt, lgb_huber.txt": "LightGBM model text files: linear trees; a regression of the Huber loss",
    "xgb_regression.json, xgb_poisson.json, torn_xgb.json": "XGBoost regression models (reg:squarederror, "
                                                            "count:poisson); an XGBoost classifier's JSON cut in half",
}


def _foreign_models(d: Path, X, y) -> None:
    """Models of other libraries, for ``edgestream import``."""
    import joblib
    import lightgbm
    import xgboost
    from sklearn.ensemble import (GradientBoostingRegressor, HistGradientBoostingClassifier,
                                  HistGradientBoostingRegressor, IsolationForest, RandomForestClassifier)
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    rng = np.random.default_rng(0)
    labels = np.arange(600) % 300
    for name, model, rows, targets in (
            ("forest", RandomForestClassifier(3, max_depth=3), X, y), ("regressor", DecisionTreeRegressor(), X, y),
            ("logistic", LogisticRegression(), X, y),
            ("quantile", GradientBoostingRegressor(loss="quantile", n_estimators=2), X, y),
            ("poisson", HistGradientBoostingRegressor(loss="poisson", max_iter=2), X, y),
            ("categorical", HistGradientBoostingClassifier(max_iter=2, categorical_features=[0]),
             np.c_[np.floor(X[:, :1]), X[:, 1:]], y),
            ("wide", DecisionTreeClassifier(max_depth=2), rng.normal(size=(50, 300)), np.arange(50) % 2),
            ("many_classes", DecisionTreeClassifier(max_depth=2), rng.normal(size=(600, 2)), labels),
            ("iforest", IsolationForest(n_estimators=3, max_samples=32), X, None),
            ("iforest_wide", IsolationForest(n_estimators=2, max_samples=16), rng.normal(size=(50, 300)), None),
            ("iforest_one", IsolationForest(n_estimators=2, max_samples=1), X, None)):
        joblib.dump(model.fit(rows, targets), d / f"{name}.joblib")
    for name, params in (("lgb_linear", dict(objective="binary", linear_tree=True)),
                         ("lgb_huber", dict(objective="huber"))):
        lightgbm.train({**params, "verbose": -1, "num_leaves": 4}, lightgbm.Dataset(X, y), 2).save_model(d / f"{name}.txt")
    xgboost.XGBRegressor(n_estimators=2).fit(X, y).save_model(d / "xgb_regression.json")
    xgboost.XGBRegressor(n_estimators=2, objective="count:poisson").fit(X, y).save_model(d / "xgb_poisson.json")
    xgboost.XGBClassifier(n_estimators=2).fit(X, y).save_model(d / "xgb.json")
    text = (d / "xgb.json").read_bytes()
    (d / "torn_xgb.json").write_bytes(text[:len(text) // 2])


def _write_csv(path: Path, X, y, header) -> None:
    lines = [",".join(header)] if header else []
    lines += [",".join([*(repr(float(v)) for v in x), str(k)]) for x, k in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")


def _broken_bundle(source: Path, target: Path, change) -> None:
    shutil.copytree(source, target)
    manifest_path = target / "edgestream.json"
    manifest = json.loads(manifest_path.read_text())
    result = change(manifest, target)
    if isinstance(result, (dict, str)):  # a new manifest (else the change was to a file)
        manifest_path.write_text(json.dumps(result, indent=2) if isinstance(result, dict) else result)


def prepare(directory: Path) -> Path:
    """Make every file the table names in ``directory``: models fitted on a small stream, their bundles and
    images, and the broken copies."""
    from edgestream import checkpoint, learners
    from edgestream.boards import boards_dir
    from edgestream.data import make_stream
    from edgestream.export import export_bundle, sha256
    from edgestream.modelfile import save_model

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name, text in TEXT_FILES.items():
        (d / name).write_text(text)
    for name, data in BINARY_FILES.items():
        (d / name).write_bytes(data)
    X, y = make_stream("sea", 300, seed=1)
    _write_csv(d / "good.csv", X, y, ["f0", "f1", "f2", "label"])
    _write_csv(d / "numeric_header.csv", X[:60], y[:60], ["0", "1", "2", "label"])
    _write_csv(d / "numeric_only_header.csv", X[:60], y[:60], ["0", "1", "2", "3"])
    _write_csv(d / "other_labels.csv", X, np.where(np.arange(len(y)) == 5, 7, y), ["f0", "f1", "f2", "label"])
    profile = (boards_dir() / "stm32f411.toml").read_text()
    (d / "bad_board.toml").write_text(profile.replace("ram_bytes = ", "ram_bytes = -1 #", 1))
    (d / "unknown_field.toml").write_text("speed = 3\n" + profile)
    (d / "no_io.toml").write_text(profile.replace('io = "semihosting"', 'io = "none"', 1))
    risc_v = (boards_dir() / "gd32vf103.toml").read_text()
    (d / "bad_isa.toml").write_text(risc_v.replace('arch = "rv32imac"', 'arch = "rv32gc"', 1))
    (d / "bad_abi.toml").write_text(risc_v.replace('abi = "ilp32"', 'abi = "ilp32d"', 1))
    (d / "tiny_ram.toml").write_text(risc_v.replace("ram_bytes = 32768", "ram_bytes = 64", 1))
    (d / "no_qemu.toml").write_text((boards_dir() / "esp32c3.toml").read_text().replace(
        'command = "qemu-system-riscv32"', 'command = "no-qemu-system-riscv32"', 1))

    tree = learners.get("tree").make(max_depth=4).fit(X, y)
    shrubs = learners.get("shrubs").make(window_size=32, max_shrubs=4, max_depth=3)
    shrubs.partial_fit(X.astype(np.float32), y, classes=np.unique(y))
    gbdt = learners.get("gbdt").make(n_estimators=5, max_leaves=4).fit(X[:100], y[:100])
    gbdt_reg = learners.get("gbdt", "regression").make("regression", n_estimators=5, max_leaves=4)
    gbdt_reg.fit(np.arange(60.0)[:, None], np.arange(60) * 0.37)
    for name, model in (("tree", tree), ("shrubs", shrubs), ("gbdt", gbdt), ("gbdt_reg", gbdt_reg)):
        save_model(model, d / f"{name}.esm")
    data = (d / "tree.esm").read_bytes()
    (d / "corrupt.esm").write_bytes(data[:100])
    (d / "flipped.esm").write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    head, payload = data.split(b"\n", 2)[1], data.split(b"\n", 2)[2]
    for name, key, value in (("future.esm", "format_version", 99), ("bad_params.esm", "params", None)):
        header = json.loads(head)
        if key == "params":
            header["params"]["max_depth"] = -3
        else:
            header[key] = value
        (d / name).write_bytes(data.split(b"\n", 1)[0] + b"\n" + json.dumps(header).encode() + b"\n" + payload)
    magic, head, payload = (d / "gbdt_reg.esm").read_bytes().split(b"\n", 2)
    header = json.loads(head) | {"saturated": -1}
    (d / "bad_saturated.esm").write_bytes(magic + b"\n" + json.dumps(header).encode() + b"\n" + payload)

    export_bundle(tree, d / "tree_b")
    export_bundle(shrubs, d / "shrubs_b")
    export_bundle(gbdt_reg, d / "gbdt_reg_b")
    image = checkpoint.write_image(shrubs, 1)
    (d / "shrubs.img").write_bytes(image)
    (d / "torn.img").write_bytes(image[:100])
    (d / "flipped.img").write_bytes(image[:-1] + bytes([image[-1] ^ 0x40]))
    for name, params, rows in (("other.img", dict(window_size=32, max_shrubs=4, max_depth=3), slice(150, None)),
                               ("other_size.img", dict(window_size=16, max_shrubs=2, max_depth=2), slice(0, 50))):
        other = learners.get("shrubs").make(**params)
        other.partial_fit(X[rows].astype(np.float32), y[rows], classes=np.unique(y))
        (d / name).write_bytes(checkpoint.write_image(other, 1))
    (d / "user_project").mkdir(exist_ok=True)
    (d / "user_project" / "Makefile").write_text("all:\n\techo mine\n")
    _foreign_models(d, X, y)

    tree_b = d / "tree_b"
    other_model = (d / "shrubs_b" / "model.esm").read_bytes()

    def field(key, value):
        return lambda m, t: {**m, key: value}

    def without(key):
        return lambda m, t: {k: v for k, v in m.items() if k != key}

    def other_model_copy(rehash: bool, relabel: bool):
        def change(m, t):
            (t / "model.esm").write_bytes(other_model)
            if rehash:
                m["files"]["model.esm"] = sha256(other_model)
            if relabel:
                m["model_sha256"] = sha256(other_model)
            return m
        return change

    broken = {
        "b_no_header": lambda m, t: (t / "src" / "model.h").unlink(),
        "b_changed_header": lambda m, t: (t / "src" / "model.h").write_text("#error changed\n"),
        "b_not_json": lambda m, t: "{not json",
        "b_format": field("format_version", 2),
        "b_bad_name": field("name", "not valid"),
        "b_keyword_name": field("name", "int"),
        "b_wrong_type": field("n_features", "3"),
        "b_learning_type": field("learning", "yes"),
        "b_no_files": without("files"),
        "b_learner": field("learner", "nope"),
        "b_classes": field("n_classes", 1),
        "b_features": field("n_features", 0),
        "b_dtype": field("input_dtype", "float64"),
        "b_class_names": field("class_names", ["0"]),
        "b_escape": lambda m, t: {**m, "sources": [*m["sources"], "../../outside.c"]},
        "b_escape_files": lambda m, t: {**m, "files": {**m["files"], "../outside.c": "0" * 64}},
        "b_include": field("include_dir", "/usr/include"),
        "b_other_model": other_model_copy(False, False),
        "b_other_model_rehashed": other_model_copy(True, False),
        "b_other_model_relabelled": other_model_copy(True, True),
    }
    for name, change in broken.items():
        _broken_bundle(tree_b, d / name, change)
    return d


def markdown() -> str:
    """``docs/bad-input.md``: the table as a page."""
    from edgestream.data import load_csv  # noqa: F401  (the header rule below is load_csv's)

    total = len(CASES)
    lines = [
        "# Bad input: what each command answers",
        "",
        "<!-- generated by `python tests/bad_inputs.py` from tests/bad_inputs.py; tests/test_bad_input.py runs every "
        "row through the CLI and checks this page -->",
        "",
        f"{total} bad inputs over every command of `edgestream`. Each is answered with one line on stderr, "
        "`edgestream: error: <message>` (argparse's usage errors print the usage above it; a budget that nothing "
        "fits prints the smallest configuration's table below it), never a Python traceback, and an exit status:",
        "",
        "* **2**, a usage error: an option out of its range or an input that is wrong (a missing, unreadable or "
        "invalid data, model, bundle, image or board file; a budget nothing fits);",
        "* **1**, a failure: the command was right but the work could not be done (an output that cannot be written, "
        "a missing compiler or emulator, a build or emulator run that fails or times out, a bundle that disagrees "
        "with Python in `demo`), and any unexpected error: one line naming it; `--debug` (or `EDGESTREAM_DEBUG=1`) "
        "adds the traceback.",
        "",
        "Option ranges are declared once, by the module that owns the setting (`edgestream.ranges.Range`: e.g. "
        "`--features` by `edgestream.tree.FEATURES`, `--workers` by `edgestream.search.WORKERS`), and used both by "
        "the Python API and as the option's argparse type; a learner's parameters are checked by the learner "
        "(`LearnerSpec.make`), so `budget` refuses what `fit` refuses.",
        "",
        "## The header rule of CSV files",
        "",
        "The first row is a header with `--header`, and data with `--no-header`. Otherwise it is a header when "
        "`--label` is a name (not a whole number) found in it (so `0,1,2,label` with `--label label` is a header of "
        "numeric names), when all its cells are non-numeric, when a feature column holds a non-numeric cell, or when "
        "the label column (given by index) holds a word above a numeric label. A header of numbers only (`0,1,2,3` "
        "with `--label 3`) needs `--header`.",
        "",
        "## Files the commands below use",
        "",
        "| file | what it is |",
        "|---|---|",
    ]
    notes = {**{name: f"`{text!r}`" if len(text) < 60 else "" for name, text in TEXT_FILES.items()},
             **{name: f"`{data!r}`" for name, data in BINARY_FILES.items()}}
    notes.update({"bad_board.toml": "", "unknown_field.toml": "", "no_io.toml": "", "many_classes.csv": "600 rows, 300 labels",
                  "ints.csv": "60 rows of one whole-number feature", "headerless.csv": "60 rows of numbers, no header"})
    for name, note in {**notes, **FILE_NOTES}.items():
        if note:
            lines.append(f"| {name} | {_cell(note)} |")
    lines.append("| missing.csv, missing.esm, missing.img, missing_b, missing.txt | do not exist |")
    lines += ["", "## The Python API", "", "Each raises `ValueError` (or a kind of it) with this message:", "",
              "| call | the message contains |", "|---|---|"]
    lines += [f"| `{_cell(call)}` | {_cell(fragment)} |" for call, fragment in API]
    for title, cases in [*SECTIONS.items(), ("accepted: inputs near the edge that succeed", ACCEPTED)]:
        lines += ["", f"## {title}", "", "| command | exit | the message contains |", "|---|---|---|"]
        for case in cases:
            env = " ".join(f"{k}={v}" for k, v in case.env)
            command = f"{env} edgestream {case.command}".strip()
            lines.append(f"| `{_cell(command)}` | {case.code} | {_cell(case.fragment)} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


if __name__ == "__main__":
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(markdown())
    print(f"{DOC}: {len(CASES)} bad inputs to the CLI, {len(API)} to the API, {len(ACCEPTED)} accepted",
          file=sys.stderr)
