"""Stop words, question words included, for the languages the analyser knows.

Written by hand for retrieval: function words and question words only, never a
word that is a common content word in another of these languages (German `hat`,
Dutch `door`, Spanish `sin` are left out). They are matched after case and accent
folding, so they are listed in their natural spelling and folded on load.
"""

from __future__ import annotations

ENGLISH = """
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his i if in into is it its
itself just me more most my myself no nor not of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom whose why how will with would you your yours yourself
yourselves s t can't cannot don doesn isn aren wasn weren won wouldn shouldn couldn didn
hasn haven hadn let us may might must shall ll re ve d m o y please tell
"""

PORTUGUESE = """
a à ao aos as às até com como da das de dela dele deles do dos e é ela elas ele eles em
entre era eram essa essas esse esses esta estas este estes eu foi for foram há isso isto já
lhe lhes mais mas me mesmo meu meus minha minhas muito na nas nem no nos nós num numa o os
ou para pela pelas pelo pelos por qual quais quando que quem se sem ser seu seus só sua
suas também te tem têm tu tua tuas um uma umas uns você vocês vos onde porque porquê
quanto quanta quantos quantas cujo cuja está estão ser são sou seja sejam ter tinha
"""

SPANISH = """
a al algo algunas algunos ante antes como con contra cual cuales cuando de del desde donde
dónde durante e el él ella ellas ellos en entre era eran es esa esas ese eso esos esta
está están estas este esto estos fue fueron ha han hasta la las le les lo los más me mi
mis mucho muy nada ni no nos nosotros o otra otro para pero poco por porque qué que quien
quién quienes se sea ser si sí sido sobre su sus también tiene tienen todo todos tu tus un
una unas uno unos usted ustedes y ya yo cuál cuáles cuándo cómo cuánto cuánta cuántos
cuántas por qué
"""

FRENCH = """
a à au aux avec ce ces cet cette dans de des du elle elles en est et être eux il ils je
la le les leur leurs lui ma mais me même mes moi mon ne nos notre nous on ou où par pas
pour qu que qui sa se ses si sont sur ta te tes toi ton tu un une vos votre vous y c d j
l m n s été était sont ont avait comme aussi plus quel quelle quels quelles quand comment
pourquoi combien lequel laquelle lesquels est-ce ceci cela ça
"""

ITALIAN = """
a ad al alla alle ai agli all anche che chi ci come con cosa cui da dal dalla dalle dai
degli dei del della delle dello di dove e è ed gli i il in io la le lei lo loro lui ma me
mi mio mia ne nei nel nella nelle noi non o per perché più poi qual quale quali quando
quanto quanta quanti quante questa queste questi questo quella quelle quelli quello se si
sia sono su sua sue suo suoi sul sulla ti tra tu un una uno voi vostro è stato stata
"""

GERMAN = """
aber alle allem allen aller alles als also am an auch auf aus bei bis da damit dann das
dass dem den denn der des dich die dir doch dort du durch ein eine einem einen einer eines
er es für gegen habe haben hatte ich ihm ihn ihr ihre im in ist ja kann kein keine mich
mir mit nach nicht noch nur ob oder sein seine sich sie sind so über um und uns unser
unter vom von vor war warum was weil welche welcher welches wenn wer werden wie wieder
wir wird wo wohin woher wann wieviel wie viel zu zum zur
"""

DUTCH = """
aan al als bij dan dat de der des deze die dit doch en er had heb hebben het hij hem hoe
hun ik in is je kan me met mij mijn na naar niet nog nu of om ons ook op over te tot uit
van voor waar wanneer wat was welk welke wie waarom we wel wij zal ze zich zij zijn zo
"""

RUSSIAN = """
и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только
ее мне было вот от меня еще нет о из ему когда даже ну ли если уже или ни быть был него до
вас вам ведь там потом себя ей может они тут где есть надо ней для мы тебя их чем была
сам чтоб без будто чего раз тоже себе под будет ж тогда кто этот того потому этого какой
ним здесь этом почти мой тем чтобы нее были куда зачем всех можно при об хоть после над
тот через эти нас про всего них какая разве эту моя свою этой перед том такой им между
почему сколько какие каков какова которые который которая которое это
"""

JAPANESE = """
の は が を に で と も へ や から まで より か な ね よ です ます でした ました だ である
ある いる する した なる これ それ あれ この その あの どこ だれ 誰 何 なに なん いつ どう
どの どれ なぜ どんな どちら ください ため こと もの
"""

CHINESE = """
的 了 是 在 和 与 或 也 都 就 而 及 着 吗 呢 吧 啊 这 那 这个 那个 这些 那些 什么 怎么 怎样
为什么 哪 哪里 哪个 哪些 谁 多少 几 如何 是否 我 你 他 她 它 我们 你们 他们 之 其 被 把
对 从 向 给 让 个 有 没有 吗 呀 么 為什麼 甚麼 這 這個 那個 們 為
"""

KOREAN = """
은 는 이 가 을 를 의 에 에서 와 과 도 으로 로 무엇 뭐 무슨 어디 언제 누구 어떻게 왜 어느 몇
이것 그것 저것 그리고 그러나 하지만 그 저 것 수 등 및
"""

THAI = """
ที่ และ ใน ของ การ เป็น มี ได้ ไม่ จะ ให้ ว่า กับ แล้ว ก็ นี้ นั้น อะไร ที่ไหน ไหน เมื่อไร เมื่อไหร่
ใคร อย่างไร ยังไง ทำไม ไหม หรือ คือ ซึ่ง โดย จาก ไป มา อยู่ ความ ครับ ค่ะ คะ บ้าง เท่าไร เท่าไหร่
"""

HINDI = """
का के की को में से पर ने है हैं था थे थी और या भी तो ही यह वह ये वे इस उस इन उन एक
क्या कौन कौनसा कब कहाँ कहां क्यों कैसे कितना कितने कितनी किस किसे किसने किसको
"""

# Vietnamese is matched with its tone marks (see analyzer._fold_accents), so it is kept
# apart from the folded lists above and used alone for Vietnamese text.
VIETNAMESE = """
của và là có các những được trong cho với một này đã không thì mà để khi từ về như
cũng đó ra sẽ nào gì ai đâu sao bao nhiêu mấy tại bởi vì nên hay hoặc rằng theo
"""

BY_LANGUAGE: dict[str, str] = {
    "en": ENGLISH,
    "pt": PORTUGUESE,
    "es": SPANISH,
    "fr": FRENCH,
    "it": ITALIAN,
    "de": GERMAN,
    "nl": DUTCH,
    "ru": RUSSIAN,
    "ja": JAPANESE,
    "zh": CHINESE,
    "ko": KOREAN,
    "th": THAI,
    "hi": HINDI,
}


def all_stop_words() -> list[str]:
    """Every listed word, unfolded; the analyser folds them."""
    return [word for block in BY_LANGUAGE.values() for word in block.split()]
