from bzrk.api.grpc._pb import common_api_pb2 as _common_api_pb2
from bzrk.api.grpc._pb import dynamic_value_pb2 as _dynamic_value_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ColumnType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COLUMN_TYPE_UNSPECIFIED: _ClassVar[ColumnType]
    COLUMN_TYPE_BOOL: _ClassVar[ColumnType]
    COLUMN_TYPE_INT: _ClassVar[ColumnType]
    COLUMN_TYPE_LONG: _ClassVar[ColumnType]
    COLUMN_TYPE_REAL: _ClassVar[ColumnType]
    COLUMN_TYPE_STRING: _ClassVar[ColumnType]
    COLUMN_TYPE_DATETIME: _ClassVar[ColumnType]
    COLUMN_TYPE_TIMESPAN: _ClassVar[ColumnType]
    COLUMN_TYPE_GUID: _ClassVar[ColumnType]
    COLUMN_TYPE_DYNAMIC: _ClassVar[ColumnType]
COLUMN_TYPE_UNSPECIFIED: ColumnType
COLUMN_TYPE_BOOL: ColumnType
COLUMN_TYPE_INT: ColumnType
COLUMN_TYPE_LONG: ColumnType
COLUMN_TYPE_REAL: ColumnType
COLUMN_TYPE_STRING: ColumnType
COLUMN_TYPE_DATETIME: ColumnType
COLUMN_TYPE_TIMESPAN: ColumnType
COLUMN_TYPE_GUID: ColumnType
COLUMN_TYPE_DYNAMIC: ColumnType

class ExecuteQueryRequest(_message.Message):
    __slots__ = ("query", "since", "until", "timezone", "database", "now_unix_nanos", "time_range_start_nanos", "time_range_end_nanos", "qws_members", "ingest_since", "ingest_until", "ingest_time_range_start_nanos", "ingest_time_range_end_nanos", "bypass_map_reduce_state_cache")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    DATABASE_FIELD_NUMBER: _ClassVar[int]
    NOW_UNIX_NANOS_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_START_NANOS_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_END_NANOS_FIELD_NUMBER: _ClassVar[int]
    QWS_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    INGEST_SINCE_FIELD_NUMBER: _ClassVar[int]
    INGEST_UNTIL_FIELD_NUMBER: _ClassVar[int]
    INGEST_TIME_RANGE_START_NANOS_FIELD_NUMBER: _ClassVar[int]
    INGEST_TIME_RANGE_END_NANOS_FIELD_NUMBER: _ClassVar[int]
    BYPASS_MAP_REDUCE_STATE_CACHE_FIELD_NUMBER: _ClassVar[int]
    query: str
    since: str
    until: str
    timezone: str
    database: _common_api_pb2.DatabaseRef
    now_unix_nanos: int
    time_range_start_nanos: int
    time_range_end_nanos: int
    qws_members: bytes
    ingest_since: str
    ingest_until: str
    ingest_time_range_start_nanos: int
    ingest_time_range_end_nanos: int
    bypass_map_reduce_state_cache: bool
    def __init__(self, query: _Optional[str] = ..., since: _Optional[str] = ..., until: _Optional[str] = ..., timezone: _Optional[str] = ..., database: _Optional[_Union[_common_api_pb2.DatabaseRef, _Mapping]] = ..., now_unix_nanos: _Optional[int] = ..., time_range_start_nanos: _Optional[int] = ..., time_range_end_nanos: _Optional[int] = ..., qws_members: _Optional[bytes] = ..., ingest_since: _Optional[str] = ..., ingest_until: _Optional[str] = ..., ingest_time_range_start_nanos: _Optional[int] = ..., ingest_time_range_end_nanos: _Optional[int] = ..., bypass_map_reduce_state_cache: _Optional[bool] = ...) -> None: ...

class ExecuteQueryResultFrame(_message.Message):
    __slots__ = ("request_id", "schema", "batch", "progress", "done", "error", "metadata", "internal_sidecar")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_SIDECAR_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    schema: TableSchema
    batch: RowBatch
    progress: Progress
    done: Completion
    error: Error
    metadata: ResultMetadata
    internal_sidecar: bytes
    def __init__(self, request_id: _Optional[str] = ..., schema: _Optional[_Union[TableSchema, _Mapping]] = ..., batch: _Optional[_Union[RowBatch, _Mapping]] = ..., progress: _Optional[_Union[Progress, _Mapping]] = ..., done: _Optional[_Union[Completion, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., metadata: _Optional[_Union[ResultMetadata, _Mapping]] = ..., internal_sidecar: _Optional[bytes] = ...) -> None: ...

class TableSchema(_message.Message):
    __slots__ = ("name", "columns")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    name: str
    columns: _containers.RepeatedCompositeFieldContainer[Column]
    def __init__(self, name: _Optional[str] = ..., columns: _Optional[_Iterable[_Union[Column, _Mapping]]] = ...) -> None: ...

class Column(_message.Message):
    __slots__ = ("name", "type", "nullable", "structural_type")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NULLABLE_FIELD_NUMBER: _ClassVar[int]
    STRUCTURAL_TYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: ColumnType
    nullable: bool
    structural_type: StructuralType
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[ColumnType, str]] = ..., nullable: _Optional[bool] = ..., structural_type: _Optional[_Union[StructuralType, _Mapping]] = ...) -> None: ...

class StructuralType(_message.Message):
    __slots__ = ("scalar", "array_elem", "object")
    SCALAR_FIELD_NUMBER: _ClassVar[int]
    ARRAY_ELEM_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    scalar: ColumnType
    array_elem: StructuralType
    object: ObjectSchema
    def __init__(self, scalar: _Optional[_Union[ColumnType, str]] = ..., array_elem: _Optional[_Union[StructuralType, _Mapping]] = ..., object: _Optional[_Union[ObjectSchema, _Mapping]] = ...) -> None: ...

class ObjectSchema(_message.Message):
    __slots__ = ("fields",)
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedCompositeFieldContainer[ObjectField]
    def __init__(self, fields: _Optional[_Iterable[_Union[ObjectField, _Mapping]]] = ...) -> None: ...

class ObjectField(_message.Message):
    __slots__ = ("name", "type")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: StructuralType
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[StructuralType, _Mapping]] = ...) -> None: ...

class RowBatch(_message.Message):
    __slots__ = ("table_name", "result_iteration_id", "rows", "is_iteration_complete")
    TABLE_NAME_FIELD_NUMBER: _ClassVar[int]
    RESULT_ITERATION_ID_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    IS_ITERATION_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    table_name: str
    result_iteration_id: str
    rows: _containers.RepeatedCompositeFieldContainer[ValueRow]
    is_iteration_complete: bool
    def __init__(self, table_name: _Optional[str] = ..., result_iteration_id: _Optional[str] = ..., rows: _Optional[_Iterable[_Union[ValueRow, _Mapping]]] = ..., is_iteration_complete: _Optional[bool] = ...) -> None: ...

class ValueRow(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedCompositeFieldContainer[_dynamic_value_pb2.BqlValue]
    def __init__(self, values: _Optional[_Iterable[_Union[_dynamic_value_pb2.BqlValue, _Mapping]]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("rows_processed", "chunks_total", "chunks_scanned", "chunks_skipped_range", "chunks_skipped_bloom", "chunks_skipped_shard", "predicate_checks", "short_circuit_completion", "chunk_scanned_raw_body_size", "chunk_skipped_raw_body_size", "chunk_skipped_compressed_size", "chunk_scan_time_nanos", "query_time_nanos", "chunk_scanned_compressed_size", "bin_progress", "queue_wait_nanos", "planning_progress", "bloom_filter_bytes", "merge_time_nanos", "chunks_empty_scan", "chunks_errored", "chunks_skipped_required_fields", "operator_diagnostics", "chunks_range_per_row", "merge_count", "reducer_clone_time_nanos", "reducer_clone_count", "snapshot_build_time_nanos", "snapshot_build_count", "worker_chunks_arm_cpu_nanos", "worker_fetching_chunk_nanos", "worker_chunk_body_nanos", "custom_stats", "s3_retries_total", "s3_giveups_total", "map_reduce_state_cache_slices_reused", "map_reduce_state_cache_slices_total", "quality")
    class CustomStatsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ROWS_PROCESSED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_SCANNED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_SKIPPED_RANGE_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_SKIPPED_BLOOM_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_SKIPPED_SHARD_FIELD_NUMBER: _ClassVar[int]
    PREDICATE_CHECKS_FIELD_NUMBER: _ClassVar[int]
    SHORT_CIRCUIT_COMPLETION_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SCANNED_RAW_BODY_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SKIPPED_RAW_BODY_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SKIPPED_COMPRESSED_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SCAN_TIME_NANOS_FIELD_NUMBER: _ClassVar[int]
    QUERY_TIME_NANOS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SCANNED_COMPRESSED_SIZE_FIELD_NUMBER: _ClassVar[int]
    BIN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_WAIT_NANOS_FIELD_NUMBER: _ClassVar[int]
    PLANNING_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    BLOOM_FILTER_BYTES_FIELD_NUMBER: _ClassVar[int]
    MERGE_TIME_NANOS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_EMPTY_SCAN_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_ERRORED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_SKIPPED_REQUIRED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_RANGE_PER_ROW_FIELD_NUMBER: _ClassVar[int]
    MERGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    REDUCER_CLONE_TIME_NANOS_FIELD_NUMBER: _ClassVar[int]
    REDUCER_CLONE_COUNT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_BUILD_TIME_NANOS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_BUILD_COUNT_FIELD_NUMBER: _ClassVar[int]
    WORKER_CHUNKS_ARM_CPU_NANOS_FIELD_NUMBER: _ClassVar[int]
    WORKER_FETCHING_CHUNK_NANOS_FIELD_NUMBER: _ClassVar[int]
    WORKER_CHUNK_BODY_NANOS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_STATS_FIELD_NUMBER: _ClassVar[int]
    S3_RETRIES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    S3_GIVEUPS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    MAP_REDUCE_STATE_CACHE_SLICES_REUSED_FIELD_NUMBER: _ClassVar[int]
    MAP_REDUCE_STATE_CACHE_SLICES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    QUALITY_FIELD_NUMBER: _ClassVar[int]
    rows_processed: int
    chunks_total: int
    chunks_scanned: int
    chunks_skipped_range: int
    chunks_skipped_bloom: int
    chunks_skipped_shard: int
    predicate_checks: int
    short_circuit_completion: bool
    chunk_scanned_raw_body_size: int
    chunk_skipped_raw_body_size: int
    chunk_skipped_compressed_size: int
    chunk_scan_time_nanos: int
    query_time_nanos: int
    chunk_scanned_compressed_size: int
    bin_progress: BinProgress
    queue_wait_nanos: int
    planning_progress: PlanningProgress
    bloom_filter_bytes: int
    merge_time_nanos: int
    chunks_empty_scan: int
    chunks_errored: int
    chunks_skipped_required_fields: int
    operator_diagnostics: _containers.RepeatedCompositeFieldContainer[OperatorDiagnostics]
    chunks_range_per_row: int
    merge_count: int
    reducer_clone_time_nanos: int
    reducer_clone_count: int
    snapshot_build_time_nanos: int
    snapshot_build_count: int
    worker_chunks_arm_cpu_nanos: int
    worker_fetching_chunk_nanos: int
    worker_chunk_body_nanos: int
    custom_stats: _containers.ScalarMap[str, int]
    s3_retries_total: int
    s3_giveups_total: int
    map_reduce_state_cache_slices_reused: int
    map_reduce_state_cache_slices_total: int
    quality: QueryQuality
    def __init__(self, rows_processed: _Optional[int] = ..., chunks_total: _Optional[int] = ..., chunks_scanned: _Optional[int] = ..., chunks_skipped_range: _Optional[int] = ..., chunks_skipped_bloom: _Optional[int] = ..., chunks_skipped_shard: _Optional[int] = ..., predicate_checks: _Optional[int] = ..., short_circuit_completion: _Optional[bool] = ..., chunk_scanned_raw_body_size: _Optional[int] = ..., chunk_skipped_raw_body_size: _Optional[int] = ..., chunk_skipped_compressed_size: _Optional[int] = ..., chunk_scan_time_nanos: _Optional[int] = ..., query_time_nanos: _Optional[int] = ..., chunk_scanned_compressed_size: _Optional[int] = ..., bin_progress: _Optional[_Union[BinProgress, _Mapping]] = ..., queue_wait_nanos: _Optional[int] = ..., planning_progress: _Optional[_Union[PlanningProgress, _Mapping]] = ..., bloom_filter_bytes: _Optional[int] = ..., merge_time_nanos: _Optional[int] = ..., chunks_empty_scan: _Optional[int] = ..., chunks_errored: _Optional[int] = ..., chunks_skipped_required_fields: _Optional[int] = ..., operator_diagnostics: _Optional[_Iterable[_Union[OperatorDiagnostics, _Mapping]]] = ..., chunks_range_per_row: _Optional[int] = ..., merge_count: _Optional[int] = ..., reducer_clone_time_nanos: _Optional[int] = ..., reducer_clone_count: _Optional[int] = ..., snapshot_build_time_nanos: _Optional[int] = ..., snapshot_build_count: _Optional[int] = ..., worker_chunks_arm_cpu_nanos: _Optional[int] = ..., worker_fetching_chunk_nanos: _Optional[int] = ..., worker_chunk_body_nanos: _Optional[int] = ..., custom_stats: _Optional[_Mapping[str, int]] = ..., s3_retries_total: _Optional[int] = ..., s3_giveups_total: _Optional[int] = ..., map_reduce_state_cache_slices_reused: _Optional[int] = ..., map_reduce_state_cache_slices_total: _Optional[int] = ..., quality: _Optional[_Union[QueryQuality, _Mapping]] = ...) -> None: ...

class BinProgress(_message.Message):
    __slots__ = ("first_bin_start", "bin_span", "completion_percentages", "overall_done", "overall_total")
    FIRST_BIN_START_FIELD_NUMBER: _ClassVar[int]
    BIN_SPAN_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_PERCENTAGES_FIELD_NUMBER: _ClassVar[int]
    OVERALL_DONE_FIELD_NUMBER: _ClassVar[int]
    OVERALL_TOTAL_FIELD_NUMBER: _ClassVar[int]
    first_bin_start: int
    bin_span: int
    completion_percentages: bytes
    overall_done: int
    overall_total: int
    def __init__(self, first_bin_start: _Optional[int] = ..., bin_span: _Optional[int] = ..., completion_percentages: _Optional[bytes] = ..., overall_done: _Optional[int] = ..., overall_total: _Optional[int] = ...) -> None: ...

class PlanningProgress(_message.Message):
    __slots__ = ("segments_done", "segments_total")
    SEGMENTS_DONE_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    segments_done: int
    segments_total: int
    def __init__(self, segments_done: _Optional[int] = ..., segments_total: _Optional[int] = ...) -> None: ...

class OperatorDiagnostics(_message.Message):
    __slots__ = ("kind", "operator_id", "values")
    KIND_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_ID_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    kind: str
    operator_id: int
    values: _containers.RepeatedCompositeFieldContainer[KeyValue]
    def __init__(self, kind: _Optional[str] = ..., operator_id: _Optional[int] = ..., values: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ...) -> None: ...

class KeyValue(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class QueryQuality(_message.Message):
    __slots__ = ("total", "scanning", "transformation", "aggregation", "measured")
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    SCANNING_FIELD_NUMBER: _ClassVar[int]
    TRANSFORMATION_FIELD_NUMBER: _ClassVar[int]
    AGGREGATION_FIELD_NUMBER: _ClassVar[int]
    MEASURED_FIELD_NUMBER: _ClassVar[int]
    total: float
    scanning: float
    transformation: float
    aggregation: float
    measured: float
    def __init__(self, total: _Optional[float] = ..., scanning: _Optional[float] = ..., transformation: _Optional[float] = ..., aggregation: _Optional[float] = ..., measured: _Optional[float] = ...) -> None: ...

class Completion(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Error(_message.Message):
    __slots__ = ("code", "title", "support_ticket_id", "message", "location", "details")
    CODE_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_TICKET_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    code: str
    title: str
    support_ticket_id: str
    message: str
    location: Location
    details: str
    def __init__(self, code: _Optional[str] = ..., title: _Optional[str] = ..., support_ticket_id: _Optional[str] = ..., message: _Optional[str] = ..., location: _Optional[_Union[Location, _Mapping]] = ..., details: _Optional[str] = ...) -> None: ...

class Location(_message.Message):
    __slots__ = ("start_byte", "end_byte", "start_line", "start_column", "end_line", "end_column")
    START_BYTE_FIELD_NUMBER: _ClassVar[int]
    END_BYTE_FIELD_NUMBER: _ClassVar[int]
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    START_COLUMN_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    END_COLUMN_FIELD_NUMBER: _ClassVar[int]
    start_byte: int
    end_byte: int
    start_line: int
    start_column: int
    end_line: int
    end_column: int
    def __init__(self, start_byte: _Optional[int] = ..., end_byte: _Optional[int] = ..., start_line: _Optional[int] = ..., start_column: _Optional[int] = ..., end_line: _Optional[int] = ..., end_column: _Optional[int] = ...) -> None: ...

class ResultMetadata(_message.Message):
    __slots__ = ("partial_failures", "visualization", "warnings")
    PARTIAL_FAILURES_FIELD_NUMBER: _ClassVar[int]
    VISUALIZATION_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    partial_failures: _containers.RepeatedCompositeFieldContainer[PartialFailure]
    visualization: VisualizationMetadata
    warnings: _containers.RepeatedCompositeFieldContainer[QueryWarning]
    def __init__(self, partial_failures: _Optional[_Iterable[_Union[PartialFailure, _Mapping]]] = ..., visualization: _Optional[_Union[VisualizationMetadata, _Mapping]] = ..., warnings: _Optional[_Iterable[_Union[QueryWarning, _Mapping]]] = ...) -> None: ...

class PartialFailure(_message.Message):
    __slots__ = ("segment_ids", "message")
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    segment_ids: _containers.RepeatedScalarFieldContainer[str]
    message: str
    def __init__(self, segment_ids: _Optional[_Iterable[str]] = ..., message: _Optional[str] = ...) -> None: ...

class VisualizationMetadata(_message.Message):
    __slots__ = ("visualization_type", "properties")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VISUALIZATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    visualization_type: str
    properties: _containers.ScalarMap[str, str]
    def __init__(self, visualization_type: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class QueryWarning(_message.Message):
    __slots__ = ("operator_id", "branch_index", "kind", "location", "message", "details")
    OPERATOR_ID_FIELD_NUMBER: _ClassVar[int]
    BRANCH_INDEX_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    operator_id: int
    branch_index: int
    kind: str
    location: Location
    message: str
    details: str
    def __init__(self, operator_id: _Optional[int] = ..., branch_index: _Optional[int] = ..., kind: _Optional[str] = ..., location: _Optional[_Union[Location, _Mapping]] = ..., message: _Optional[str] = ..., details: _Optional[str] = ...) -> None: ...
