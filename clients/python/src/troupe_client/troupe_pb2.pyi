from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BAD_FRAMES: ErrorCode
BAD_HEADER: ErrorCode
BAD_REQUEST: ErrorCode
BAD_TENSOR: ErrorCode
BUSY: ErrorCode
CACHE_FULL: ErrorCode
CANCELLED: ErrorCode
DESCRIPTOR: _descriptor.FileDescriptor
DTYPE_BF16: Dtype
DTYPE_F16: Dtype
DTYPE_F32: Dtype
DTYPE_INT8_BLOCK32: Dtype
DTYPE_UNSPECIFIED: Dtype
EARLY_STOPPING_FALSE: EarlyStopping
EARLY_STOPPING_NEVER: EarlyStopping
EARLY_STOPPING_TRUE: EarlyStopping
ERROR_CODE_UNSPECIFIED: ErrorCode
FINISH_EOS: FinishReason
FINISH_LENGTH: FinishReason
FINISH_REASON_UNSPECIFIED: FinishReason
FINISH_STOP: FinishReason
FORBIDDEN: ErrorCode
INTERNAL: ErrorCode
JOB_ABORTED: JobState
JOB_COMPLETED: JobState
JOB_QUEUED: JobState
JOB_RUNNING: JobState
JOB_STATE_UNSPECIFIED: JobState
LIMIT_EXCEEDED: ErrorCode
NON_FINITE: ErrorCode
NO_ROUTE: ErrorCode
OVERSIZED: ErrorCode
SESSION_BUSY: ErrorCode
SESSION_EXISTS: ErrorCode
SESSION_FULL: ErrorCode
STAGE_EMBEDDING: Stage
STAGE_LM_HEAD: Stage
STAGE_SAMPLER: Stage
STAGE_SCHEDULER: Stage
STAGE_SHARD: Stage
STAGE_UNSPECIFIED: Stage
TIMEOUT: ErrorCode
UNAUTHENTICATED: ErrorCode
UNAVAILABLE: ErrorCode
UNKNOWN_JOB: ErrorCode
UNKNOWN_SESSION: ErrorCode
UNKNOWN_TYPE: ErrorCode
VERSION_MISMATCH: ErrorCode
WRONG_MODEL: ErrorCode

class BeamSequence(_message.Message):
    __slots__ = ["index", "score", "token_ids"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    index: int
    score: float
    token_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, index: _Optional[int] = ..., token_ids: _Optional[_Iterable[int]] = ..., score: _Optional[float] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ["content", "role"]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    content: str
    role: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class ConsoleQuery(_message.Message):
    __slots__ = ["seconds", "session_id", "view"]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    seconds: float
    session_id: int
    view: str
    def __init__(self, view: _Optional[str] = ..., session_id: _Optional[int] = ..., seconds: _Optional[float] = ...) -> None: ...

class ConsoleView(_message.Message):
    __slots__ = ["json"]
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...

class Coverage(_message.Message):
    __slots__ = ["model_fingerprint", "model_name", "n_layers", "replicas", "spans"]
    MODEL_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    N_LAYERS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SPANS_FIELD_NUMBER: _ClassVar[int]
    model_fingerprint: str
    model_name: str
    n_layers: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    spans: _containers.RepeatedCompositeFieldContainer[LayerRange]
    def __init__(self, n_layers: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., model_fingerprint: _Optional[str] = ..., model_name: _Optional[str] = ..., spans: _Optional[_Iterable[_Union[LayerRange, _Mapping]]] = ...) -> None: ...

class CoverageQuery(_message.Message):
    __slots__ = ["model_fingerprint", "model_name", "node_id"]
    MODEL_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    model_fingerprint: str
    model_name: str
    node_id: str
    def __init__(self, node_id: _Optional[str] = ..., model_fingerprint: _Optional[str] = ..., model_name: _Optional[str] = ...) -> None: ...

class Endpoint(_message.Message):
    __slots__ = ["address", "name"]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    address: str
    name: str
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ...) -> None: ...

class Envelope(_message.Message):
    __slots__ = ["console_query", "console_view", "coverage", "coverage_query", "error", "finish", "heartbeat", "job_attach", "job_cancel", "job_status", "job_status_query", "job_submit", "kept_session_close", "kept_session_closed", "kept_session_list", "kept_session_query", "metrics_query", "metrics_snapshot", "node_drain", "node_drain_status", "ping", "pong", "prompt_logprobs", "protocol_version", "registry_announce", "request_id", "session_close", "session_open", "session_opened", "step", "step_burst", "token"]
    CONSOLE_QUERY_FIELD_NUMBER: _ClassVar[int]
    CONSOLE_VIEW_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_QUERY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    JOB_ATTACH_FIELD_NUMBER: _ClassVar[int]
    JOB_CANCEL_FIELD_NUMBER: _ClassVar[int]
    JOB_STATUS_FIELD_NUMBER: _ClassVar[int]
    JOB_STATUS_QUERY_FIELD_NUMBER: _ClassVar[int]
    JOB_SUBMIT_FIELD_NUMBER: _ClassVar[int]
    KEPT_SESSION_CLOSED_FIELD_NUMBER: _ClassVar[int]
    KEPT_SESSION_CLOSE_FIELD_NUMBER: _ClassVar[int]
    KEPT_SESSION_LIST_FIELD_NUMBER: _ClassVar[int]
    KEPT_SESSION_QUERY_FIELD_NUMBER: _ClassVar[int]
    METRICS_QUERY_FIELD_NUMBER: _ClassVar[int]
    METRICS_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    NODE_DRAIN_FIELD_NUMBER: _ClassVar[int]
    NODE_DRAIN_STATUS_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    PONG_FIELD_NUMBER: _ClassVar[int]
    PROMPT_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    REGISTRY_ANNOUNCE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_CLOSE_FIELD_NUMBER: _ClassVar[int]
    SESSION_OPENED_FIELD_NUMBER: _ClassVar[int]
    SESSION_OPEN_FIELD_NUMBER: _ClassVar[int]
    STEP_BURST_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    console_query: ConsoleQuery
    console_view: ConsoleView
    coverage: Coverage
    coverage_query: CoverageQuery
    error: Error
    finish: Finish
    heartbeat: Heartbeat
    job_attach: JobAttach
    job_cancel: JobCancel
    job_status: JobStatus
    job_status_query: JobStatusQuery
    job_submit: JobSubmit
    kept_session_close: KeptSessionClose
    kept_session_closed: KeptSessionClosed
    kept_session_list: KeptSessionList
    kept_session_query: KeptSessionQuery
    metrics_query: MetricsQuery
    metrics_snapshot: MetricsSnapshot
    node_drain: NodeDrain
    node_drain_status: NodeDrainStatus
    ping: Ping
    pong: Pong
    prompt_logprobs: PromptLogprobs
    protocol_version: int
    registry_announce: RegistryAnnounce
    request_id: int
    session_close: SessionClose
    session_open: SessionOpen
    session_opened: SessionOpened
    step: Step
    step_burst: StepBurst
    token: Token
    def __init__(self, protocol_version: _Optional[int] = ..., request_id: _Optional[int] = ..., session_open: _Optional[_Union[SessionOpen, _Mapping]] = ..., session_opened: _Optional[_Union[SessionOpened, _Mapping]] = ..., session_close: _Optional[_Union[SessionClose, _Mapping]] = ..., step: _Optional[_Union[Step, _Mapping]] = ..., token: _Optional[_Union[Token, _Mapping]] = ..., finish: _Optional[_Union[Finish, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., job_submit: _Optional[_Union[JobSubmit, _Mapping]] = ..., job_cancel: _Optional[_Union[JobCancel, _Mapping]] = ..., job_status_query: _Optional[_Union[JobStatusQuery, _Mapping]] = ..., job_status: _Optional[_Union[JobStatus, _Mapping]] = ..., registry_announce: _Optional[_Union[RegistryAnnounce, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., metrics_snapshot: _Optional[_Union[MetricsSnapshot, _Mapping]] = ..., metrics_query: _Optional[_Union[MetricsQuery, _Mapping]] = ..., kept_session_close: _Optional[_Union[KeptSessionClose, _Mapping]] = ..., kept_session_query: _Optional[_Union[KeptSessionQuery, _Mapping]] = ..., kept_session_list: _Optional[_Union[KeptSessionList, _Mapping]] = ..., kept_session_closed: _Optional[_Union[KeptSessionClosed, _Mapping]] = ..., prompt_logprobs: _Optional[_Union[PromptLogprobs, _Mapping]] = ..., job_attach: _Optional[_Union[JobAttach, _Mapping]] = ..., coverage_query: _Optional[_Union[CoverageQuery, _Mapping]] = ..., coverage: _Optional[_Union[Coverage, _Mapping]] = ..., ping: _Optional[_Union[Ping, _Mapping]] = ..., pong: _Optional[_Union[Pong, _Mapping]] = ..., node_drain: _Optional[_Union[NodeDrain, _Mapping]] = ..., node_drain_status: _Optional[_Union[NodeDrainStatus, _Mapping]] = ..., console_query: _Optional[_Union[ConsoleQuery, _Mapping]] = ..., console_view: _Optional[_Union[ConsoleView, _Mapping]] = ..., step_burst: _Optional[_Union[StepBurst, _Mapping]] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ["code", "job_id", "node_id", "queue_depth", "retry_after_seconds", "retryable", "session_id", "text"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_DEPTH_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    code: ErrorCode
    job_id: int
    node_id: str
    queue_depth: int
    retry_after_seconds: float
    retryable: bool
    session_id: int
    text: str
    def __init__(self, code: _Optional[_Union[ErrorCode, str]] = ..., text: _Optional[str] = ..., session_id: _Optional[int] = ..., job_id: _Optional[int] = ..., node_id: _Optional[str] = ..., retryable: bool = ..., queue_depth: _Optional[int] = ..., retry_after_seconds: _Optional[float] = ...) -> None: ...

class Finish(_message.Message):
    __slots__ = ["cached_tokens", "decode_seconds", "decode_steps", "first_token_seconds", "generated_tokens", "job_id", "peak_rss_mb", "prompt_tokens", "queue_seconds", "reason", "replays", "session_id", "total_seconds"]
    CACHED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    DECODE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DECODE_STEPS_FIELD_NUMBER: _ClassVar[int]
    FIRST_TOKEN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    GENERATED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    PEAK_RSS_MB_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REPLAYS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    cached_tokens: int
    decode_seconds: float
    decode_steps: int
    first_token_seconds: float
    generated_tokens: int
    job_id: int
    peak_rss_mb: float
    prompt_tokens: int
    queue_seconds: float
    reason: FinishReason
    replays: int
    session_id: int
    total_seconds: float
    def __init__(self, session_id: _Optional[int] = ..., job_id: _Optional[int] = ..., reason: _Optional[_Union[FinishReason, str]] = ..., prompt_tokens: _Optional[int] = ..., generated_tokens: _Optional[int] = ..., queue_seconds: _Optional[float] = ..., first_token_seconds: _Optional[float] = ..., total_seconds: _Optional[float] = ..., replays: _Optional[int] = ..., decode_steps: _Optional[int] = ..., decode_seconds: _Optional[float] = ..., peak_rss_mb: _Optional[float] = ..., cached_tokens: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ["cache_budget_bytes", "cache_bytes", "device", "draining", "link_troubles", "node_id", "rss_bytes", "sessions", "step_ms", "steps_total", "version"]
    CACHE_BUDGET_BYTES_FIELD_NUMBER: _ClassVar[int]
    CACHE_BYTES_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    LINK_TROUBLES_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    STEPS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    STEP_MS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    cache_budget_bytes: int
    cache_bytes: int
    device: str
    draining: bool
    link_troubles: _containers.RepeatedCompositeFieldContainer[LinkTrouble]
    node_id: str
    rss_bytes: int
    sessions: int
    step_ms: float
    steps_total: int
    version: str
    def __init__(self, node_id: _Optional[str] = ..., step_ms: _Optional[float] = ..., sessions: _Optional[int] = ..., link_troubles: _Optional[_Iterable[_Union[LinkTrouble, _Mapping]]] = ..., draining: bool = ..., rss_bytes: _Optional[int] = ..., version: _Optional[str] = ..., device: _Optional[str] = ..., cache_bytes: _Optional[int] = ..., cache_budget_bytes: _Optional[int] = ..., steps_total: _Optional[int] = ...) -> None: ...

class Histogram(_message.Message):
    __slots__ = ["bounds", "count", "counts", "sum"]
    BOUNDS_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    SUM_FIELD_NUMBER: _ClassVar[int]
    bounds: _containers.RepeatedScalarFieldContainer[float]
    count: int
    counts: _containers.RepeatedScalarFieldContainer[int]
    sum: float
    def __init__(self, bounds: _Optional[_Iterable[float]] = ..., counts: _Optional[_Iterable[int]] = ..., sum: _Optional[float] = ..., count: _Optional[int] = ...) -> None: ...

class HopTime(_message.Message):
    __slots__ = ["compute_us", "node_id", "queue_us", "send_us", "stage"]
    COMPUTE_US_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_US_FIELD_NUMBER: _ClassVar[int]
    SEND_US_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    compute_us: int
    node_id: str
    queue_us: int
    send_us: int
    stage: Stage
    def __init__(self, node_id: _Optional[str] = ..., stage: _Optional[_Union[Stage, str]] = ..., queue_us: _Optional[int] = ..., compute_us: _Optional[int] = ..., send_us: _Optional[int] = ...) -> None: ...

class JobAttach(_message.Message):
    __slots__ = ["from_index", "job_id", "stream"]
    FROM_INDEX_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    from_index: int
    job_id: int
    stream: bool
    def __init__(self, job_id: _Optional[int] = ..., stream: bool = ..., from_index: _Optional[int] = ...) -> None: ...

class JobCancel(_message.Message):
    __slots__ = ["job_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    def __init__(self, job_id: _Optional[int] = ...) -> None: ...

class JobRecord(_message.Message):
    __slots__ = ["final", "stream"]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    final: Envelope
    stream: _containers.RepeatedCompositeFieldContainer[Envelope]
    def __init__(self, stream: _Optional[_Iterable[_Union[Envelope, _Mapping]]] = ..., final: _Optional[_Union[Envelope, _Mapping]] = ...) -> None: ...

class JobStatus(_message.Message):
    __slots__ = ["failure", "finish_reason", "job_id", "priority", "queue_position", "session_id", "state", "tokens"]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    failure: Error
    finish_reason: FinishReason
    job_id: int
    priority: int
    queue_position: int
    session_id: int
    state: JobState
    tokens: int
    def __init__(self, job_id: _Optional[int] = ..., state: _Optional[_Union[JobState, str]] = ..., queue_position: _Optional[int] = ..., session_id: _Optional[int] = ..., tokens: _Optional[int] = ..., priority: _Optional[int] = ..., finish_reason: _Optional[_Union[FinishReason, str]] = ..., failure: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class JobStatusQuery(_message.Message):
    __slots__ = ["job_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    def __init__(self, job_id: _Optional[int] = ...) -> None: ...

class JobSubmit(_message.Message):
    __slots__ = ["chat", "job_id", "keep", "max_length", "priority", "prompt", "prompt_tokens", "sampling", "session", "stream", "system"]
    CHAT_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    KEEP_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    chat: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    job_id: int
    keep: bool
    max_length: int
    priority: int
    prompt: str
    prompt_tokens: _containers.RepeatedScalarFieldContainer[int]
    sampling: SamplingParams
    session: str
    stream: bool
    system: str
    def __init__(self, job_id: _Optional[int] = ..., prompt: _Optional[str] = ..., chat: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., system: _Optional[str] = ..., sampling: _Optional[_Union[SamplingParams, _Mapping]] = ..., stream: bool = ..., session: _Optional[str] = ..., keep: bool = ..., max_length: _Optional[int] = ..., prompt_tokens: _Optional[_Iterable[int]] = ..., priority: _Optional[int] = ...) -> None: ...

class KeptSession(_message.Message):
    __slots__ = ["context_tokens", "expires_in_seconds", "idle_seconds", "jobs", "max_length", "name", "route", "running_job"]
    CONTEXT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_IN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IDLE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    RUNNING_JOB_FIELD_NUMBER: _ClassVar[int]
    context_tokens: int
    expires_in_seconds: float
    idle_seconds: float
    jobs: int
    max_length: int
    name: str
    route: _containers.RepeatedScalarFieldContainer[str]
    running_job: int
    def __init__(self, name: _Optional[str] = ..., context_tokens: _Optional[int] = ..., max_length: _Optional[int] = ..., jobs: _Optional[int] = ..., running_job: _Optional[int] = ..., idle_seconds: _Optional[float] = ..., expires_in_seconds: _Optional[float] = ..., route: _Optional[_Iterable[str]] = ...) -> None: ...

class KeptSessionClose(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class KeptSessionClosed(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class KeptSessionList(_message.Message):
    __slots__ = ["sessions"]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[KeptSession]
    def __init__(self, sessions: _Optional[_Iterable[_Union[KeptSession, _Mapping]]] = ...) -> None: ...

class KeptSessionQuery(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class LayerRange(_message.Message):
    __slots__ = ["begin", "end"]
    BEGIN_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    begin: int
    end: int
    def __init__(self, begin: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class LinkTrouble(_message.Message):
    __slots__ = ["endpoint", "node_id", "text"]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    endpoint: str
    node_id: str
    text: str
    def __init__(self, node_id: _Optional[str] = ..., endpoint: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class MetricsQuery(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class MetricsSnapshot(_message.Message):
    __slots__ = ["counters", "gauges", "histograms", "node_id", "route_problem"]
    class CountersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class GaugesEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class HistogramsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Histogram
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Histogram, _Mapping]] = ...) -> None: ...
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    GAUGES_FIELD_NUMBER: _ClassVar[int]
    HISTOGRAMS_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ROUTE_PROBLEM_FIELD_NUMBER: _ClassVar[int]
    counters: _containers.ScalarMap[str, int]
    gauges: _containers.ScalarMap[str, float]
    histograms: _containers.MessageMap[str, Histogram]
    node_id: str
    route_problem: str
    def __init__(self, node_id: _Optional[str] = ..., counters: _Optional[_Mapping[str, int]] = ..., gauges: _Optional[_Mapping[str, float]] = ..., histograms: _Optional[_Mapping[str, Histogram]] = ..., route_problem: _Optional[str] = ...) -> None: ...

class NodeDrain(_message.Message):
    __slots__ = ["node_id", "timeout_seconds"]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    timeout_seconds: float
    def __init__(self, node_id: _Optional[str] = ..., timeout_seconds: _Optional[float] = ...) -> None: ...

class NodeDrainStatus(_message.Message):
    __slots__ = ["moved", "node_id", "staying", "text"]
    MOVED_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    STAYING_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    moved: int
    node_id: str
    staying: int
    text: str
    def __init__(self, node_id: _Optional[str] = ..., moved: _Optional[int] = ..., staying: _Optional[int] = ..., text: _Optional[str] = ...) -> None: ...

class Ping(_message.Message):
    __slots__ = ["sent_micros"]
    SENT_MICROS_FIELD_NUMBER: _ClassVar[int]
    sent_micros: int
    def __init__(self, sent_micros: _Optional[int] = ...) -> None: ...

class Pong(_message.Message):
    __slots__ = ["link_troubles", "node_id", "sent_micros"]
    LINK_TROUBLES_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SENT_MICROS_FIELD_NUMBER: _ClassVar[int]
    link_troubles: _containers.RepeatedCompositeFieldContainer[LinkTrouble]
    node_id: str
    sent_micros: int
    def __init__(self, sent_micros: _Optional[int] = ..., node_id: _Optional[str] = ..., link_troubles: _Optional[_Iterable[_Union[LinkTrouble, _Mapping]]] = ...) -> None: ...

class PromptLogprobs(_message.Message):
    __slots__ = ["job_id", "tokens"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    tokens: _containers.RepeatedCompositeFieldContainer[PromptToken]
    def __init__(self, job_id: _Optional[int] = ..., tokens: _Optional[_Iterable[_Union[PromptToken, _Mapping]]] = ...) -> None: ...

class PromptToken(_message.Message):
    __slots__ = ["logprob", "token_bytes", "token_id", "top_logprobs"]
    LOGPROB_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    logprob: float
    token_bytes: bytes
    token_id: int
    top_logprobs: _containers.RepeatedCompositeFieldContainer[TokenLogprob]
    def __init__(self, token_id: _Optional[int] = ..., logprob: _Optional[float] = ..., token_bytes: _Optional[bytes] = ..., top_logprobs: _Optional[_Iterable[_Union[TokenLogprob, _Mapping]]] = ...) -> None: ...

class RegistryAnnounce(_message.Message):
    __slots__ = ["draining", "endpoints", "incarnation", "layers", "layers_digest", "model_fingerprint", "model_name", "node_id", "public_key", "serves"]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    LAYERS_DIGEST_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    SERVES_FIELD_NUMBER: _ClassVar[int]
    draining: bool
    endpoints: _containers.RepeatedCompositeFieldContainer[Endpoint]
    incarnation: int
    layers: _containers.RepeatedCompositeFieldContainer[LayerRange]
    layers_digest: str
    model_fingerprint: str
    model_name: str
    node_id: str
    public_key: str
    serves: _containers.RepeatedScalarFieldContainer[Stage]
    def __init__(self, node_id: _Optional[str] = ..., endpoints: _Optional[_Iterable[_Union[Endpoint, _Mapping]]] = ..., model_fingerprint: _Optional[str] = ..., layers: _Optional[_Iterable[_Union[LayerRange, _Mapping]]] = ..., public_key: _Optional[str] = ..., model_name: _Optional[str] = ..., layers_digest: _Optional[str] = ..., draining: bool = ..., serves: _Optional[_Iterable[_Union[Stage, str]]] = ..., incarnation: _Optional[int] = ...) -> None: ...

class RouteHop(_message.Message):
    __slots__ = ["encoding", "endpoint", "layer_begin", "layer_end", "node_id", "public_key", "stage"]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    LAYER_BEGIN_FIELD_NUMBER: _ClassVar[int]
    LAYER_END_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    encoding: Dtype
    endpoint: str
    layer_begin: int
    layer_end: int
    node_id: str
    public_key: str
    stage: Stage
    def __init__(self, node_id: _Optional[str] = ..., endpoint: _Optional[str] = ..., stage: _Optional[_Union[Stage, str]] = ..., layer_begin: _Optional[int] = ..., layer_end: _Optional[int] = ..., public_key: _Optional[str] = ..., encoding: _Optional[_Union[Dtype, str]] = ...) -> None: ...

class SamplingParams(_message.Message):
    __slots__ = ["contrastive", "contrastive_alpha", "contrastive_beta", "early_stopping", "frequency_penalty", "length_penalty", "logit_bias", "max_tokens", "min_p", "min_tokens", "no_repeat_ngram_size", "num_beams", "num_return_sequences", "presence_penalty", "prompt_logprobs", "repeat_last_n", "repeat_penalty", "seed", "stop", "temperature", "top_a", "top_k", "top_logprobs", "top_p"]
    class LogitBiasEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: float
        def __init__(self, key: _Optional[int] = ..., value: _Optional[float] = ...) -> None: ...
    CONTRASTIVE_ALPHA_FIELD_NUMBER: _ClassVar[int]
    CONTRASTIVE_BETA_FIELD_NUMBER: _ClassVar[int]
    CONTRASTIVE_FIELD_NUMBER: _ClassVar[int]
    EARLY_STOPPING_FIELD_NUMBER: _ClassVar[int]
    FREQUENCY_PENALTY_FIELD_NUMBER: _ClassVar[int]
    LENGTH_PENALTY_FIELD_NUMBER: _ClassVar[int]
    LOGIT_BIAS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MIN_P_FIELD_NUMBER: _ClassVar[int]
    MIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    NO_REPEAT_NGRAM_SIZE_FIELD_NUMBER: _ClassVar[int]
    NUM_BEAMS_FIELD_NUMBER: _ClassVar[int]
    NUM_RETURN_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    PRESENCE_PENALTY_FIELD_NUMBER: _ClassVar[int]
    PROMPT_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    REPEAT_LAST_N_FIELD_NUMBER: _ClassVar[int]
    REPEAT_PENALTY_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_A_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    contrastive: bool
    contrastive_alpha: float
    contrastive_beta: float
    early_stopping: EarlyStopping
    frequency_penalty: float
    length_penalty: float
    logit_bias: _containers.ScalarMap[int, float]
    max_tokens: int
    min_p: float
    min_tokens: int
    no_repeat_ngram_size: int
    num_beams: int
    num_return_sequences: int
    presence_penalty: float
    prompt_logprobs: int
    repeat_last_n: int
    repeat_penalty: float
    seed: int
    stop: _containers.RepeatedScalarFieldContainer[str]
    temperature: float
    top_a: float
    top_k: int
    top_logprobs: int
    top_p: float
    def __init__(self, temperature: _Optional[float] = ..., top_k: _Optional[int] = ..., top_p: _Optional[float] = ..., min_p: _Optional[float] = ..., top_a: _Optional[float] = ..., repeat_penalty: _Optional[float] = ..., repeat_last_n: _Optional[int] = ..., min_tokens: _Optional[int] = ..., max_tokens: _Optional[int] = ..., seed: _Optional[int] = ..., stop: _Optional[_Iterable[str]] = ..., top_logprobs: _Optional[int] = ..., presence_penalty: _Optional[float] = ..., frequency_penalty: _Optional[float] = ..., no_repeat_ngram_size: _Optional[int] = ..., logit_bias: _Optional[_Mapping[int, float]] = ..., contrastive: bool = ..., contrastive_alpha: _Optional[float] = ..., contrastive_beta: _Optional[float] = ..., prompt_logprobs: _Optional[int] = ..., num_beams: _Optional[int] = ..., length_penalty: _Optional[float] = ..., early_stopping: _Optional[_Union[EarlyStopping, str]] = ..., num_return_sequences: _Optional[int] = ...) -> None: ...

class SessionClose(_message.Message):
    __slots__ = ["park", "session_id"]
    PARK_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    park: bool
    session_id: int
    def __init__(self, session_id: _Optional[int] = ..., park: bool = ...) -> None: ...

class SessionOpen(_message.Message):
    __slots__ = ["copy_from", "copy_length", "max_length", "model_fingerprint", "rows", "session_id"]
    COPY_FROM_FIELD_NUMBER: _ClassVar[int]
    COPY_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MODEL_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    copy_from: int
    copy_length: int
    max_length: int
    model_fingerprint: str
    rows: int
    session_id: int
    def __init__(self, session_id: _Optional[int] = ..., max_length: _Optional[int] = ..., model_fingerprint: _Optional[str] = ..., rows: _Optional[int] = ..., copy_from: _Optional[int] = ..., copy_length: _Optional[int] = ...) -> None: ...

class SessionOpened(_message.Message):
    __slots__ = ["copied", "node_id", "session_id"]
    COPIED_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    copied: int
    node_id: str
    session_id: int
    def __init__(self, session_id: _Optional[int] = ..., node_id: _Optional[str] = ..., copied: _Optional[int] = ...) -> None: ...

class Step(_message.Message):
    __slots__ = ["all_logits", "burst_id", "burst_size", "first_position", "hidden_digest", "hop", "parent_rows", "rest_of_route", "session_id", "shadow_of", "tensor", "times", "token_count", "token_ids"]
    ALL_LOGITS_FIELD_NUMBER: _ClassVar[int]
    BURST_ID_FIELD_NUMBER: _ClassVar[int]
    BURST_SIZE_FIELD_NUMBER: _ClassVar[int]
    FIRST_POSITION_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_DIGEST_FIELD_NUMBER: _ClassVar[int]
    HOP_FIELD_NUMBER: _ClassVar[int]
    PARENT_ROWS_FIELD_NUMBER: _ClassVar[int]
    REST_OF_ROUTE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SHADOW_OF_FIELD_NUMBER: _ClassVar[int]
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    TIMES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    all_logits: bool
    burst_id: int
    burst_size: int
    first_position: int
    hidden_digest: int
    hop: RouteHop
    parent_rows: _containers.RepeatedScalarFieldContainer[int]
    rest_of_route: _containers.RepeatedCompositeFieldContainer[RouteHop]
    session_id: int
    shadow_of: int
    tensor: TensorDesc
    times: _containers.RepeatedCompositeFieldContainer[HopTime]
    token_count: int
    token_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, session_id: _Optional[int] = ..., first_position: _Optional[int] = ..., token_count: _Optional[int] = ..., rest_of_route: _Optional[_Iterable[_Union[RouteHop, _Mapping]]] = ..., tensor: _Optional[_Union[TensorDesc, _Mapping]] = ..., token_ids: _Optional[_Iterable[int]] = ..., hop: _Optional[_Union[RouteHop, _Mapping]] = ..., parent_rows: _Optional[_Iterable[int]] = ..., all_logits: bool = ..., times: _Optional[_Iterable[_Union[HopTime, _Mapping]]] = ..., shadow_of: _Optional[int] = ..., hidden_digest: _Optional[int] = ..., burst_id: _Optional[int] = ..., burst_size: _Optional[int] = ...) -> None: ...

class StepBurst(_message.Message):
    __slots__ = ["steps"]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedCompositeFieldContainer[Step]
    def __init__(self, steps: _Optional[_Iterable[_Union[Step, _Mapping]]] = ...) -> None: ...

class TensorDesc(_message.Message):
    __slots__ = ["dtype", "shape"]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    dtype: Dtype
    shape: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dtype: _Optional[_Union[Dtype, str]] = ..., shape: _Optional[_Iterable[int]] = ...) -> None: ...

class Token(_message.Message):
    __slots__ = ["beam_sequence", "eos", "index", "job_id", "logprob", "session_id", "text", "token_bytes", "token_id", "top_logprobs"]
    BEAM_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    EOS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LOGPROB_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    beam_sequence: BeamSequence
    eos: bool
    index: int
    job_id: int
    logprob: float
    session_id: int
    text: str
    token_bytes: bytes
    token_id: int
    top_logprobs: _containers.RepeatedCompositeFieldContainer[TokenLogprob]
    def __init__(self, session_id: _Optional[int] = ..., token_id: _Optional[int] = ..., text: _Optional[str] = ..., job_id: _Optional[int] = ..., index: _Optional[int] = ..., eos: bool = ..., logprob: _Optional[float] = ..., token_bytes: _Optional[bytes] = ..., top_logprobs: _Optional[_Iterable[_Union[TokenLogprob, _Mapping]]] = ..., beam_sequence: _Optional[_Union[BeamSequence, _Mapping]] = ...) -> None: ...

class TokenLogprob(_message.Message):
    __slots__ = ["logprob", "token_bytes", "token_id"]
    LOGPROB_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    logprob: float
    token_bytes: bytes
    token_id: int
    def __init__(self, token_id: _Optional[int] = ..., logprob: _Optional[float] = ..., token_bytes: _Optional[bytes] = ...) -> None: ...

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Stage(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EarlyStopping(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Dtype(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class FinishReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
