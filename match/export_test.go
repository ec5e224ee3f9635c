package match

import "github.com/contextfold/contextfold/match/ranked"

// SetNeedleByteCheck turns the needle stage's byte check on or off (the
// stage then decodes every node it reads) and returns the previous
// setting. Not safe while scans run.
func SetNeedleByteCheck(on bool) bool {
	was := needleByteCheck
	needleByteCheck = on
	return was
}

// SetNeedleBuf makes the needle stage's buffers n bytes (nodes that do
// not fit in what is left of one are read into their own) and returns the
// previous size. Not safe while scans run.
func SetNeedleBuf(n int) int {
	was := needleBuf
	needleBuf, needleBufs = n, newNeedleBufs()
	return was
}

// NeedleDecodes returns how many nodes the needle stage has decoded.
func NeedleDecodes() int64 { return needleDecodes.Load() }

// SetNeedlesBeside turns on or off the needle stage's reads beside the
// ranked scan and returns the previous setting. Not safe while scans run.
func SetNeedlesBeside(on bool) bool {
	was := needlesBeside
	needlesBeside = on
	return was
}

// OutputFirstOrder is rule "an output answers for its exchange"
// (outputFirst) on picks, for its benchmark.
func OutputFirstOrder(picks []ranked.Pick) []ranked.Pick { return outputFirst(picks, nil) }

// FocusMemoHits returns how many hydrations reused the focusing a scan
// costed (focusMemo).
func FocusMemoHits() int64 { return focusMemoHits.Load() }

// ClearFocusMemo empties the focusings the scans kept.
func ClearFocusMemo() { focusMemo.clear() }

// OutputFirstOrderNext is OutputFirstOrder with nextStep giving the step
// after an assistant's pick's (ranked.Index.NextStep).
func OutputFirstOrderNext(picks []ranked.Pick, nextStep func(int) (int, bool)) []ranked.Pick {
	return outputFirst(picks, nextStep)
}
