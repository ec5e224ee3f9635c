package match

// SetNeedleByteCheck turns the needle stage's byte check on or off (the
// stage then decodes every node it reads) and returns the previous
// setting. Not safe while scans run.
func SetNeedleByteCheck(on bool) bool {
	was := needleByteCheck
	needleByteCheck = on
	return was
}

// NeedleDecodes returns how many nodes the needle stage has decoded.
func NeedleDecodes() int64 { return needleDecodes.Load() }
