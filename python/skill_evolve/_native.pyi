"""Type stubs of ``skill_evolve._native``, the module compiled from the Rust kernel."""

from os import PathLike
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__version__: str

JsonDict = Dict[str, Any]

# -- errors -------------------------------------------------------------------

class SkillEvolveError(ValueError):
    """Base class of the errors this module raises: a kernel function refused its input."""

class GateError(SkillEvolveError):
    """The gate refused its parameters or counts."""

class PatchError(SkillEvolveError):
    """A malformed edit, malformed region markers, or a region text over its limit."""

class JsonError(SkillEvolveError):
    """No JSON object could be read from an LLM reply."""

class BudgetError(SkillEvolveError):
    """An edit budget schedule that grows (start below end)."""

class MetricsError(SkillEvolveError):
    """An unusable prediction, trace or profile given to the rule metrics."""

class InputError(SkillEvolveError):
    """A problem with the user's input (a file, a configuration, an option); nothing was written."""

# -- the gate -----------------------------------------------------------------

#: The named parameter sets: ``seed`` (the default), ``calibrated``, ``thrifty``, ``thorough``.
PRESET_NAMES: List[str]

class GateVerdict:
    """What the gate decided after a block, with the evidence behind it."""

    @property
    def decision(self) -> str:
        """``accept_confirmed``, ``accept_provisional``, ``reject_directional``,
        ``reject_futility``, ``reject_inertia`` or ``continue``."""
    @property
    def accepted(self) -> bool:
        """Whether the candidate is accepted (confirmed or provisionally)."""
    @property
    def terminal(self) -> bool:
        """Whether the decision ends the comparison (every decision but ``continue``)."""
    @property
    def e_value(self) -> float:
        """The e-value of the wins and losses."""
    @property
    def ln_e_value(self) -> float:
        """Its natural logarithm."""
    @property
    def wald_lambda(self) -> float:
        """Wald's statistic ``W·ln 1.4 + L·ln 0.6``."""
    @property
    def delta_hat(self) -> float:
        """The net win rate ``(W − L) / n_used``."""
    @property
    def delta_shrunk(self) -> float:
        """The net win rate shrunk towards 0: ``(W − L) / (n_used + 4)``."""
    def to_dict(self) -> JsonDict:
        """The verdict as a dict, in the JSON form the run log records."""

class Gate:
    """The anytime-valid gate: decides from paired wins and losses whether a candidate
    beats its baseline. Its thresholds are checked once, when it is built (``GateError``).
    """

    def __init__(
        self,
        preset: Optional[str] = None,
        *,
        e_confirm: Optional[float] = None,
        e_provisional: Optional[float] = None,
        w_net_min: Optional[int] = None,
        delta_min: Optional[float] = None,
        lambda_dir: Optional[float] = None,
        e_rollback: Optional[float] = None,
        e_process: Union[str, Mapping[str, Any], None] = None,
    ) -> None:
        """The preset's thresholds (``seed`` by default) with the given keywords replacing
        its values; ``e_process`` is ``"uniform_mixture"`` or
        ``{"kind": "likelihood_ratio", "alternative": p}``."""
    @property
    def params(self) -> JsonDict:
        """The thresholds as a dict; ``Gate(**gate.params)`` rebuilds the same gate."""
    def decide(self, w: int, l: int, n_used: int, n_remaining: int = 0) -> GateVerdict:
        """The verdict after a block: ``w`` wins and ``l`` losses among ``n_used`` paired
        questions, ``n_remaining`` questions still available (0: the last block)."""
    def probation(self, w: int, l: int) -> str:
        """``confirmed``, ``rollback`` or ``unverified`` for a provisionally accepted version."""
    def e_value(self, w: int, l: int) -> float:
        """The e-value of ``w`` wins against ``l`` losses under this gate's e-process."""
    def ln_e_value(self, w: int, l: int) -> float:
        """Its natural logarithm, finite where the e-value overflows."""

def e_value(w: int, l: int) -> float:
    """The uniform-mixture e-value ``E(w, l)``."""

def ln_e_value(w: int, l: int) -> float:
    """``ln E(w, l)``, finite where ``E`` itself overflows."""

def wald_lambda(w: int, l: int) -> float:
    """Wald's statistic ``w·ln 1.4 + l·ln 0.6``."""

# -- the patch engine ---------------------------------------------------------

APPENDIX_START: str
APPENDIX_END: str
APPENDIX_HEADING: str
APPENDIX_MAX_CHARS: int
SLOW_UPDATE_START: str
SLOW_UPDATE_END: str
SLOW_UPDATE_HEADING: str
SLOW_UPDATE_MAX_CHARS: int

def apply_patch_with_report(
    document: str,
    edits: Sequence[Mapping[str, Any]],
    protected_spans: Sequence[str] = ...,
) -> Tuple[str, List[JsonDict]]:
    """Applies the edits (``{"op", "target", "content"}`` dicts, SkillOpt's format) in
    order, never touching a protected range, and returns the new document and one report
    dict per edit (``index``, ``op``, ``status``, ``target``, ``content_preview``)."""

def normalize_edits(edits: Sequence[Mapping[str, Any]]) -> List[JsonDict]:
    """The edits as the patch engine reads them, written back as dicts."""

def append_to_appendix(document: str, notes: Sequence[str]) -> str:
    """The document with the notes appended to its execution-notes appendix."""

def extract_appendix_notes(document: str) -> List[str]:
    """The notes of the execution-notes appendix, without their bullets."""

def replace_appendix_notes(document: str, notes: Sequence[str]) -> str:
    """The document with its appendix notes replaced (an empty list removes the appendix)."""

def replace_slow_update(document: str, guidance: str) -> str:
    """The document with the slow-update (long-term guidance) region holding ``guidance``."""

def slow_update_inner(document: str) -> Optional[str]:
    """The guidance inside the slow-update region, ``None`` without one."""

def appendix_region_bounds(document: str) -> Optional[Tuple[int, int]]:
    """``(start, end)`` of the appendix region, markers included, as ``str`` indices."""

def slow_update_region_bounds(document: str) -> Optional[Tuple[int, int]]:
    """``(start, end)`` of the slow-update region, markers included, as ``str`` indices."""

# -- LLM replies --------------------------------------------------------------

def extract_json_from_response(reply: str) -> JsonDict:
    """The JSON object in an LLM reply (whole, fenced, outermost braces, then repaired);
    ``JsonError`` when there is none."""

def parse_json_object(reply: str) -> Optional[JsonDict]:
    """The reply's JSON object read strictly, else repaired; ``None`` when there is none."""

def parse_llm_json(reply: str) -> Optional[JsonDict]:
    """The whole reply as an object, else the first ```` ```json ```` block; no repair."""

def strip_think_blocks(reply: str) -> str:
    """The reply without its ``<think>…</think>`` blocks."""

# -- rule metrics and budgets -------------------------------------------------

Profile = Union[str, Mapping[str, Any], None]

def extract_rule_metrics(
    prediction: Mapping[str, Any],
    trace: Sequence[Mapping[str, Any]],
    profile: Profile = None,
) -> JsonDict:
    """The rule metrics of one question from its prediction and trace records; the
    profile is ``None``/``"neutral"``, ``"video_qa"`` or a dict."""

def calc_format_compliance(raw_contents: Sequence[str]) -> float:
    """The share of raw step outputs that hold a JSON object (1.0 without steps)."""

def calc_budget_usage(steps_used: int, max_steps: int) -> float:
    """``steps_used / max_steps``; 0.0 or 1.0 when ``max_steps`` is 0."""

def calc_confidence_calibration(confidence: float, correct: bool, profile: Profile = None) -> str:
    """``high_conf_wrong``, ``low_conf_right`` or ``calibrated``."""

def calc_repeat_visit_rate(node_ids: Sequence[str]) -> float:
    """``(visits − distinct nodes) / visits``; 0.0 without visits."""

def calc_search_keyword_repetition(queries: Sequence[str]) -> float:
    """The highest trigram similarity between two queries; 0.0 with fewer than two."""

def calc_tool_usage(tool_names: Sequence[str]) -> Dict[str, int]:
    """Tool name → number of calls."""

def extract_last_confidence(raw_contents: Sequence[str], fallback: float = 0.5) -> float:
    """``reflect.confidence`` of the last step's JSON; 0.5 when unusable, ``fallback``
    when absent."""

def edit_budget_at(step: int, total: int, start: int, end: int) -> int:
    """The edit budget at ``step`` of ``total``, linear from ``start`` down to ``end``;
    ``BudgetError`` when ``start < end``."""

# -- the project operations ---------------------------------------------------

StrPath = Union[str, "PathLike[str]"]

def run(
    config: Optional[StrPath] = None,
    on_event: Optional[Callable[[JsonDict], None]] = None,
    *,
    fresh: bool = False,
    dry_run: bool = False,
    allow_unreviewed: bool = False,
    record: Optional[StrPath] = None,
    preferences: Optional[StrPath] = None,
) -> JsonDict:
    """Runs (or resumes) the run configuration ``config`` (an ``evolve.toml``; ``None`` finds
    the nearest one from the current folder up), calling ``on_event(dict)`` with every event
    (its ``event`` key names it; ``"line"`` events carry the decision lines the command
    prints). ``dry_run`` only checks and returns the ``preflight``; ``fresh`` starts over.
    Returns ``preflight``, ``interrupted``, and for a finished run ``report``, ``report_md``,
    ``report_html`` and ``staged``. Ctrl-C (or an exception in ``on_event``) stops the run
    cleanly and is raised; running again resumes, only with the inputs the run started with
    (a changed skill, question set, split or agent raises ``InputError`` naming what changed
    and ``fresh``). ``preferences`` names the project's house rules file (text every proposal
    prompt carries, checks a proposal must pass before its gate), over the configuration's
    ``[preferences] file``. ``InputError`` for bad input."""

def status(project: Optional[StrPath] = None) -> List[JsonDict]:
    """The runs of a project (``None``: the current folder or the nearest one above it with
    runs): ``name``, ``dir``, ``state`` (``finished`` or ``not_finished``), ``resumable``,
    ``changed`` (the user files an unfinished run read that changed since it started: it
    cannot resume, only start over), ``final_version``, ``staged``, ``waiting``,
    ``documents``, ``run_ids`` and ``lines``."""

def adopt(
    run: str,
    *,
    project: Optional[StrPath] = None,
    skills: Optional[Sequence[str]] = None,
    confirm: bool = False,
    undo: bool = False,
) -> JsonDict:
    """The staged documents of the run ``run`` (its name or folder): without ``confirm=True``
    nothing is written and the result holds the ``diff`` to show, the ``documents`` that would
    be written and ``notes``; with ``confirm=True`` (the user saw the diff and said yes) each
    is written through its version store and ``adopted`` lists ``{"file", "version"}``. With
    ``undo=True`` the same steps take an adoption of the run back: each file it wrote gets the
    text the run started from again."""

def harvest(
    source: str,
    *,
    from_: Optional[StrPath] = None,
    project: Optional[StrPath] = None,
    since: Optional[str] = None,
    skill: Optional[str] = None,
    out: Optional[StrPath] = None,
    tasks: Optional[StrPath] = None,
    min_sessions: int = 2,
    no_redact: bool = False,
    config: Optional[StrPath] = None,
    recorded: bool = False,
    on_note: Optional[Callable[[JsonDict], None]] = None,
) -> JsonDict:
    """Agent sessions into trajectories, as ``skill-evolve harvest``: ``source`` is
    ``"claude-code"``, ``"codex"``, ``"gemini"``, ``"opencode"``, ``"cursor"``, ``"copilot"``,
    ``"session-state"`` or ``"dir"``; ``recorded=True`` reads only the sessions the host's
    session-end hook recorded. ``on_note(dict)`` gets each note (``kind`` ``"warning"``,
    ``"skipped"`` or ``"session"``). Returns ``source``, ``from``, ``also_from`` (further
    folders read: GitHub Copilot's default reads VS Code's and the CLI's), ``counts``,
    ``redactions``, ``out``, ``tasks`` and ``lines``."""
