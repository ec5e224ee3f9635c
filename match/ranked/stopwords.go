package ranked

import "strings"

// Stop words (rule "stop words"): function words and conversational filler
// of English, Spanish and Turkish, which carry no intent of their own, and
// the generic verbs of prompts to an agent ("make", "does", "successfully")
// that the field reports saw winning set covers. Matched after folding
// (lower case); Chinese is handled by cjkStopChars and cjkStopWords.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, list := range []string{englishStop, spanishStop, turkishStop} {
		for _, w := range strings.Fields(list) {
			m[w] = true
		}
	}
	return m
}()

// IsStopWord reports whether the folded word w is a stop word of the ranked
// matcher (English, Spanish, Turkish).
func IsStopWord(w string) bool { return stopWords[w] }

const englishStop = `
a about above after again against all also am an and any are aren as at be because been before being
below between both but by can cannot could couldn did didn do does doesn doing don down during each
few for from further had hadn has hasn have haven having he her here hers herself him himself his how
i if in into is isn it its itself just let me more most my myself no nor not now of off on once only
or other our ours ourselves out over own same she should shouldn so some such than that the their
theirs them themselves then there these they this those through to too under until up very was wasn
we were weren what when where which while who whom why will with won would wouldn you your yours
yourself yourselves ll re ve isn't don't doesn't didn't can't won't it's i'm
thanks thank thx please pls ok okay yes yeah yep sure great cool nice good fine alright right
go going goes went continue continued proceed next keep carry still
make makes made making do done get gets got getting give gave put take took use used using
tell told say says said show shows shown showed let's lets want wanted need needs needed like
exactly actually really maybe perhaps also again already earlier previous previously before
successfully successful something anything everything thing things way ways lot lots bit
one two first last new old now then there here well much many every
can could would should might must shall may will
what's where's who's how's that's there's here's
hi hello hey sorry wait hmm
write writes wrote written add adds added create creates created implement look looks looking see seen help explain summarize summarise try tried start draft generate
`

const spanishStop = `
el la los las un una unos unas lo al del de en y o u e ni que qué a ante bajo con contra desde
durante entre hacia hasta mediante para por según sin sobre tras es son fue fueron era eran ser
estar está están estaba estaban he ha han había hay se su sus mi mis tu tus nuestro nuestra
este esta esto estos estas ese esa eso esos esas aquel aquella como cómo cuando cuándo donde dónde
cual cuál cuales quien quién porque por qué muy más menos ya también pero sino si sí no le les me
te nos os yo tú él ella ellos ellas usted ustedes todo toda todos todas otro otra otros otras
mismo misma cada algo nada gracias vale bueno sigue seguir continúa continuar favor ahora luego
hacer hace hizo hecho dime decir dijo dijiste mostrar muestra antes después
`

const turkishStop = `
ve veya ile için bir bu şu o da de ki mi mı mu mü ne neden niye nasıl nerede hangi kim kadar
gibi daha çok az en ama fakat ancak ise değil var yok her hep hiç bazı şey şeyi ben sen biz
siz onlar bana sana beni seni bizi onu ona bunu buna şunu olarak olan oldu olur olmuş olsun
sonra önce şimdi artık yine zaten lütfen teşekkürler teşekkür sağol sağ tamam evet hayır
devam et etti edildi ediyor yap yaptı yapıldı yapar göster söyle
`

// cjkStopChars are Chinese function characters; a bigram made only of them
// is skipped.
var cjkStopChars = func() map[rune]bool {
	m := map[rune]bool{}
	for _, r := range "的了是在我你他她它们和就都而及与着或吗呢吧啊也很这那有个一不要会到说上去把被让给对从为之以其所么呀哦嗯请" {
		m[r] = true
	}
	return m
}()

// cjkStopWords are Chinese function words and filler, as bigrams.
var cjkStopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`我们 你们 他们 她们 它们 什么 这个 那个 怎么 为什么 可以 一个 没有 就是 还是 但是 因为 所以
如果 已经 现在 然后 这样 的话 谢谢 继续 好的 请问 之前 以前 刚才 一下 一些 这些 那些 哪个 哪些 如何 是否 还有 告诉 说说 问题
多少 哪里 哪儿 怎样 几个 为何 是否`) {
		m[w] = true
	}
	return m
}()
