package rdb

import (
	"bytes"
	"errors"
)

// FUNCTION DUMP's payload: per library the RDB_OPCODE_FUNCTION2 opcode and
// the library's code as an RDB string, then the footer. (Redis 7.0's
// release candidates wrote RDB_OPCODE_FUNCTION: one function's name,
// engine, description and body.)
const (
	opFunction2     = 245
	opFunctionPreGA = 246
)

// The errors of RestoreFunctions carry Redis's FUNCTION RESTORE texts.
var (
	errFunctionPreGA  = errors.New("Pre-GA function format not supported") //nolint:staticcheck // ST1005: Redis's reply, verbatim
	errNotAFunction   = errors.New("given type is not a function")
	errLibraryPayload = errors.New("Failed loading library payload") //nolint:staticcheck // ST1005: Redis's reply, verbatim
)

// DumpFunctions encodes the libraries' codes as a FUNCTION DUMP payload.
func DumpFunctions(codes [][]byte) []byte {
	var b []byte
	for _, code := range codes {
		b = append(b, opFunction2)
		b = appendLen(b, uint64(len(code)))
		b = append(b, code...)
	}
	return Seal(b, Version)
}

// RestoreFunctions decodes a FUNCTION DUMP payload into the libraries'
// codes, in order.
func RestoreFunctions(payload []byte) ([][]byte, error) {
	end, ok := checkFooter(payload)
	if !ok {
		return nil, ErrChecksum
	}
	d := decoder{b: append([]byte(nil), payload[:end]...)}
	var codes [][]byte
	for d.left() > 0 {
		t, _ := d.readByte()
		switch t {
		case opFunction2:
		case opFunctionPreGA:
			code, err := d.preGAFunction()
			if err != nil {
				return nil, err
			}
			codes = append(codes, code)
			continue
		default:
			return nil, errNotAFunction
		}
		code, ok := d.str()
		if !ok {
			return nil, errLibraryPayload
		}
		codes = append(codes, code)
	}
	return codes, nil
}

// preGAFunction reads a release candidate's function (name, engine, an
// optional description, code) as Redis 7.0 loads one: a library of that
// name whose code follows the engine's header line. Its errors are Redis's
// at the same points.
func (d *decoder) preGAFunction() ([]byte, error) {
	name, ok := d.str()
	if !ok {
		return nil, errors.New("Failed loading library name") //nolint:staticcheck // ST1005: Redis's reply, verbatim
	}
	engine, ok := d.str()
	if !ok {
		return nil, errors.New("Failed loading engine name") //nolint:staticcheck // ST1005: Redis's reply, verbatim
	}
	hasDesc, ok := d.length()
	if !ok {
		return nil, errors.New("Failed loading library description indicator") //nolint:staticcheck // ST1005: Redis's reply, verbatim
	}
	if hasDesc != 0 {
		if _, ok := d.str(); !ok {
			return nil, errors.New("Failed loading library description") //nolint:staticcheck // ST1005: Redis's reply, verbatim
		}
	}
	blob, ok := d.str()
	if !ok {
		return nil, errors.New("Failed loading library blob") //nolint:staticcheck // ST1005: Redis's reply, verbatim
	}
	code := append([]byte("#!"), bytes.ToLower(engine)...)
	code = append(append(append(code, " name="...), name...), '\n')
	return append(code, blob...), nil
}
