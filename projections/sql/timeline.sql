-- Every event with a readable one-line description, in table order (pitlog replay).
CREATE OR REPLACE VIEW timeline AS
SELECT
    table_id, shoe_id, round_no, seq, occurred_at, recorded_at, actor, event_type,
    CASE event_type
        WHEN 'TableOpened' THEN printf('table opened: %s, pays %d/%d/%d/%d, three of a kind %d to 1, wagers %s to %s',
            profile, pays_spread_1, pays_spread_2, pays_spread_3, pays_spread_4_to_11,
            pays_three_of_a_kind, dollars(min_wager_cents), dollars(max_wager_cents))
        WHEN 'TableClosed' THEN 'table closed' || CASE WHEN reason <> '' THEN ': ' || reason ELSE '' END
        WHEN 'DealerTappedIn' THEN 'dealer ' || dealer_id || ' taps in'
        WHEN 'DealerTappedOut' THEN 'dealer ' || dealer_id || ' taps out'
        WHEN 'ShuffleStarted' THEN 'shuffle started (' || lower(method)
            || coalesce(', device ' || device_id, '') || ')'
        WHEN 'ShuffleCompleted' THEN 'shuffle completed (' || lower(method)
            || coalesce(', device ' || device_id, '') || ')'
        WHEN 'CardsCut' THEN printf('cards cut at %d', "position")
        WHEN 'CuttingCardPlaced' THEN printf('cutting card placed, %d cards behind it', cards_behind)
        WHEN 'CardsLoaded' THEN printf('%d deck%s loaded into shoe %s', decks,
            CASE WHEN decks = 1 THEN '' ELSE 's' END, shoe_id)
        WHEN 'CardBurned' THEN 'burns ' || card_label(rank, suit)
            || ' face down to the rack (' || lower(reason) || ')'
        WHEN 'BurnDisclosed' THEN 'burnt card disclosed: ' || card_label(rank, suit)
            || coalesce(printf(' (asked by seat %d)', requested_by_seat), '')
        WHEN 'CuttingCardReached' THEN 'cutting card reached'
        WHEN 'ShoeClosed' THEN printf('shoe closed, %d cards remaining', cards_remaining)
        WHEN 'DeviceFaulted' THEN 'device ' || device_id || ' fault: ' || lower(fault)
            || CASE WHEN detail <> '' THEN ' (' || detail || ')' ELSE '' END
        WHEN 'CardDrawn' THEN card_label(rank, suit)
            || CASE WHEN face_up THEN ' face up' ELSE ' face down' END
            || CASE destination WHEN 'DISCARD_RACK' THEN ' to the discard rack'
                   ELSE ' to the ' || lower(destination) || ' box' END
        WHEN 'CardFoundFaceUp' THEN card_label(rank, suit) || ' found face up in the shoe (not used)'
        WHEN 'CardDrawnInError' THEN card_label(rank, suit)
            || ' drawn in error (to be used as the next card, 13:47-20.31(g)2)'
        WHEN 'CardsRacked' THEN 'racks ' || array_to_string(
            list_transform(cards, lambda c: card_label(c.rank, c.suit)), ' ')
        WHEN 'Announced' THEN '"' || phrase || '" (' || lower(meaning)
            || coalesce(' ' || CAST("value" AS VARCHAR), '') || ')'
        WHEN 'RoundVoided' THEN 'round voided: ' || reason
        WHEN 'WagerPlaced' THEN printf('seat %d wagers %s (%s)', seat, dollars(amount_cents),
            replace(lower(instrument), '_', ' '))
            || CASE WHEN area <> seat THEN printf(' on area %d', area) ELSE '' END
        WHEN 'WagerChanged' THEN printf('seat %d changes the wager to %s', seat, dollars(amount_cents))
        WHEN 'WagerRemoved' THEN printf('seat %d removes the wager', seat)
        WHEN 'RaisePlaced' THEN printf('seat %d raises %s', seat, dollars(amount_cents))
        WHEN 'VoidOrPlayChosen' THEN printf('seat %d chooses to %s', seat,
            CASE choice WHEN 'VOID' THEN 'void the round' ELSE 'play the round out' END)
        WHEN 'WagerSettled' THEN printf('seat %d %s %s', seat,
            CASE wager_kind WHEN 'RAISE' THEN 'raise' ELSE 'wager' END,
            CASE outcome
                -- odds are optional ("X to 1" when WON): without them, the amount alone
                WHEN 'WON' THEN printf('won: paid %s', dollars(amount_cents))
                                || coalesce(printf(' at %d to 1', odds), '')
                WHEN 'LOST' THEN printf('lost: %s collected', dollars(amount_cents))
                ELSE printf('void: %s returned', dollars(amount_cents)) END)
        WHEN 'EventCorrected' THEN printf('corrects seq %d: %s', corrects_seq, reason)
        ELSE event_type
    END AS description,
    log_partition, log_offset
FROM events
ORDER BY table_id, seq, log_offset;
