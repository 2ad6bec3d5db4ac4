// tutorials/control-flow.as: the control flow and arithmetic of the language, with no model.
// It totals a shopping list, classifies the total against a limit, trims the limit until it
// fits, and draws a small bar.
// Shows: anonymous `main agent { main func(…) }`, `for … max N`, `if` / `else if` / `else`,
// `loop until … max N`, `repeat * N`, `+ - * /`, `< <= > >=`, `+=` / `-=`, unary minus,
// parentheses, `and` / `or` / `not`, `==` / `!=`, `none`, string `+` and `.length`,
// member assignment, and a final object expression as the return value.
// Syntax: later forms (0.1.0 has no arithmetic, comparisons, `else if` or `max`).
// There is no generate, so the mock is never asked: the responses file is an empty list.
// Run offline:
//   agentscript run tutorials/control-flow.as --mock tutorials/control-flow.responses.json --input '{"limit": 100, "items": [{"name": "tea", "price": 4.5, "qty": 2}, {"name": "kettle", "price": 39, "qty": 1}, {"name": "mugs", "price": 12, "qty": 6}]}'

main agent {
    main func(input {
        limit: number
        items: list[json]
    }) {
        total = 0
        count = 0
        priciest = none
        for item in input.items max 20 {
            total += item.price * item.qty
            count += 1
            if priciest == none or item.price > priciest.price {
                priciest = item
            }
        }

        report = { status: "unknown", over_by: 0 }
        margin = input.limit - total
        if margin < 0 {
            report.status = "over"
            report.over_by = -margin
        } else if margin <= input.limit / 10 {
            report.status = "tight"
        } else {
            report.status = "comfortable"
        }

        // Cut 10 from the spend each round until it fits the limit (at most 5 rounds).
        cuts = 0
        spend = total
        loop until spend <= input.limit max 5 {
            spend -= 10
            cuts += 1
        }

        bar = ""
        repeat * 3 {
            bar = bar + "#"
        }

        label = "total " + total + " for " + count + " items"
        {
            total: total,
            average: (total / count),
            priciest: priciest.name,
            status: report.status,
            over_by: report.over_by,
            cuts: cuts,
            fits: cuts != 0 and not (spend > input.limit),
            bar: bar,
            label: label,
            label_length: label.length,
        }
    }
}
