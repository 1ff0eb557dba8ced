from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BqlValue(_message.Message):
    __slots__ = ("null_value", "real_value", "long_value", "int_value", "string_value", "bool_value", "timespan_value", "bag_value", "array_value", "datetime_value")
    NULL_VALUE_FIELD_NUMBER: _ClassVar[int]
    REAL_VALUE_FIELD_NUMBER: _ClassVar[int]
    LONG_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    TIMESPAN_VALUE_FIELD_NUMBER: _ClassVar[int]
    BAG_VALUE_FIELD_NUMBER: _ClassVar[int]
    ARRAY_VALUE_FIELD_NUMBER: _ClassVar[int]
    DATETIME_VALUE_FIELD_NUMBER: _ClassVar[int]
    null_value: bool
    real_value: float
    long_value: int
    int_value: int
    string_value: str
    bool_value: bool
    timespan_value: int
    bag_value: PropertyBag
    array_value: Array
    datetime_value: int
    def __init__(self, null_value: _Optional[bool] = ..., real_value: _Optional[float] = ..., long_value: _Optional[int] = ..., int_value: _Optional[int] = ..., string_value: _Optional[str] = ..., bool_value: _Optional[bool] = ..., timespan_value: _Optional[int] = ..., bag_value: _Optional[_Union[PropertyBag, _Mapping]] = ..., array_value: _Optional[_Union[Array, _Mapping]] = ..., datetime_value: _Optional[int] = ...) -> None: ...

class PropertyBag(_message.Message):
    __slots__ = ("properties",)
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: BqlValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[BqlValue, _Mapping]] = ...) -> None: ...
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    properties: _containers.MessageMap[str, BqlValue]
    def __init__(self, properties: _Optional[_Mapping[str, BqlValue]] = ...) -> None: ...

class Array(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedCompositeFieldContainer[BqlValue]
    def __init__(self, values: _Optional[_Iterable[_Union[BqlValue, _Mapping]]] = ...) -> None: ...
