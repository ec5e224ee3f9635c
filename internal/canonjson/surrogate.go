package canonjson

// LoneSurrogate returns the byte offset in raw (JSON text) of the first
// \uXXXX escape at or after from that is a UTF-16 surrogate not half of a
// high+low pair — an escape decoding turns into U+FFFD, not text — or -1
// when there is none. Escapes are read from from on, so from must not fall
// inside one (0, or just past an escape LoneSurrogate returned: offset+6).
// An escaped backslash (\\) is skipped whole, so \\ud800 is not an escape.
func LoneSurrogate(raw []byte, from int) int {
	for i := from; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escaped character, \\ included
			continue
		}
		v := hex4(raw[i+2:])
		if v < 0 {
			continue
		}
		switch {
		case v >= 0xD800 && v <= 0xDBFF:
			if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if w := hex4(raw[i+8:]); w >= 0xDC00 && w <= 0xDFFF {
					i += 11
					continue
				}
			}
			return i
		case v >= 0xDC00 && v <= 0xDFFF:
			return i
		}
		i += 5
	}
	return -1
}
