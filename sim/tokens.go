package sim

import "strings"

// words is the vocabulary of generated text: short, common, and free of any
// character JSON would need to escape.
var words = strings.Fields(`the of and to in is was that for on are with as his they be at one have this
from or had by hot word but what some we can out other were all there when up use your how said an each
she which do their time if will way about many then them write would like so these her long make thing see
him two has look more day could go come did number sound no most people my over know water than call first
who may down side been now find any new work part take get place made live where after back little only round
man year came show every good me give our under name very through just form sentence great think say help low
line differ turn cause much mean before move right boy old too same tell does set three want air well also play
small end put home read hand port large spell add even land here must big high such follow act why ask men change
went light kind off need house picture try us again animal point mother world near build self earth father head
stand own page should country found answer school grow study still learn plant cover food sun four between state
keep eye never last let thought city tree cross farm hard start might story saw far sea draw left late run while
press close night real life few north open seem together next white children begin got walk example ease paper
group always music those both mark often letter until mile river car feet care second book carry took science`)

// Word returns the i-th word of the generated text for a request seeded by seed.
func Word(seed uint64, i int) string {
	return words[(seed*2654435761+uint64(i)*40503)%uint64(len(words))]
}

// CountTokens is the sim's tokenizer: every whitespace-separated word is one
// token, and every 6 further characters of a long word one more. It stands
// in for a real tokenizer (common English words are one token in Llama's
// and GPT's), close enough for load and deliberately not identical to any
// client's guess, so that calibration has something to learn.
func CountTokens(s string) int {
	n, wordLen := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\n', '\t', '\r':
			if wordLen > 0 {
				n += 1 + (wordLen-1)/6
				wordLen = 0
			}
		default:
			wordLen++
		}
	}
	if wordLen > 0 {
		n += 1 + (wordLen-1)/6
	}
	return n
}
