// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssc: the dm_ssc generic netlink family (include/uapi/linux/dm-ssc.h):
 * volume queries, mode changes, and the events the engine and the target
 * report.
 */

#include "ssc-target.h"

/* ---------------------------------------------------------------------
 * Netlink: the dm_ssc generic netlink family (include/uapi/linux/dm-ssc.h)
 */

static_assert((int)SSC_MODE_WRITETHROUGH == DM_SSC_MODE_WRITETHROUGH);
static_assert((int)SSC_MODE_WRITEBACK == DM_SSC_MODE_WRITEBACK);
static_assert((int)SSC_MODE_WRITEAROUND == DM_SSC_MODE_WRITEAROUND);
static_assert((int)SSC_MODE_PASSTHROUGH == DM_SSC_MODE_PASSTHROUGH);

enum { SSC_MCGRP_EVENTS };

static const struct genl_multicast_group ssc_mcgrps[] = {
	[SSC_MCGRP_EVENTS] = { .name = DM_SSC_GENL_MCGRP_EVENTS,
			       .flags = GENL_MCAST_CAP_NET_ADMIN },
};

static const struct nla_policy ssc_nl_policy[DM_SSC_A_MAX + 1] = {
	[DM_SSC_A_VOLUME] = { .type = NLA_NUL_STRING, .len = DM_SSC_VOLUME_LEN - 1 },
};

static int ssc_nl_get_doit(struct sk_buff *skb, struct genl_info *info);
static int ssc_nl_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb);

static const struct genl_small_ops ssc_nl_ops[] = {
	{
		.cmd = DM_SSC_CMD_GET,
		.flags = GENL_ADMIN_PERM,
		.doit = ssc_nl_get_doit,
		.dumpit = ssc_nl_get_dumpit,
	},
};

struct genl_family ssc_genl_family __ro_after_init = {
	.name = DM_SSC_GENL_NAME,
	.version = DM_SSC_GENL_VERSION,
	.maxattr = DM_SSC_A_MAX,
	.policy = ssc_nl_policy,
	.module = THIS_MODULE,
	.small_ops = ssc_nl_ops,
	.n_small_ops = ARRAY_SIZE(ssc_nl_ops),
	.mcgrps = ssc_mcgrps,
	.n_mcgrps = ARRAY_SIZE(ssc_mcgrps),
};

u32 ssc_state(struct ssc_c *sc)
{
	if (ssc_engine_error(sc->eng))
		return sc->mode == SSC_MODE_WRITEBACK ? DM_SSC_STATE_READ_ONLY :
			DM_SSC_STATE_FAILED;
	return READ_ONCE(sc->writeback_all) ? DM_SSC_STATE_WRITEBACK_ALL :
		DM_SSC_STATE_OK;
}

/* The attributes every message about a volume starts with */
static int ssc_nl_put_volume(struct sk_buff *skb, struct ssc_c *sc)
{
	char name[DM_NAME_LEN];

	if (dm_copy_name_and_uuid(sc->md, name, NULL))
		return -ENODEV;
	if (nla_put_string(skb, DM_SSC_A_VOLUME, name) ||
	    nla_put_u32(skb, DM_SSC_A_DEV, disk_devt(dm_disk(sc->md))))
		return -EMSGSIZE;
	return 0;
}

static int ssc_nl_put_u64(struct sk_buff *skb, int attr, u64 v)
{
	return nla_put_u64_64bit(skb, attr, v, DM_SSC_A_PAD);
}

/* One volume's answer to DM_SSC_CMD_GET */
static int ssc_nl_fill(struct sk_buff *skb, struct ssc_c *sc, u32 portid,
		       u32 seq, int flags)
{
	struct ssc_engine_stats st;
	void *hdr;
	int r;

	hdr = genlmsg_put(skb, portid, seq, &ssc_genl_family, flags,
			  DM_SSC_CMD_GET);
	if (!hdr)
		return -EMSGSIZE;
	ssc_engine_get_stats(sc->eng, &st);
	r = ssc_nl_put_volume(skb, sc);
	if (!r && (nla_put_u32(skb, DM_SSC_A_MODE, sc->mode) ||
		   nla_put_u32(skb, DM_SSC_A_STATE, ssc_state(sc)) ||
		   nla_put_u32(skb, DM_SSC_A_ERROR, -st.error) ||
		   ssc_nl_put_u64(skb, DM_SSC_A_CACHED, st.cached) ||
		   ssc_nl_put_u64(skb, DM_SSC_A_DIRTY, st.dirty) ||
		   ssc_nl_put_u64(skb, DM_SSC_A_NR_SLOTS, st.nr_slots)))
		r = -EMSGSIZE;
	if (r) {
		genlmsg_cancel(skb, hdr);
		return r;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int ssc_nl_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	char name[DM_NAME_LEN];
	struct sk_buff *msg;
	struct ssc_c *sc;
	int r = -ENODEV;

	if (GENL_REQ_ATTR_CHECK(info, DM_SSC_A_VOLUME))
		return -EINVAL;
	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	mutex_lock(&ssc_volumes_lock);
	list_for_each_entry(sc, &ssc_volumes, vol_node) {
		if (!sc->live || dm_copy_name_and_uuid(sc->md, name, NULL) ||
		    nla_strcmp(info->attrs[DM_SSC_A_VOLUME], name))
			continue;
		r = ssc_nl_fill(msg, sc, info->snd_portid, info->snd_seq, 0);
		break;
	}
	mutex_unlock(&ssc_volumes_lock);
	if (r) {
		nlmsg_free(msg);
		if (r == -ENODEV)
			NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[DM_SSC_A_VOLUME],
					    "no live ssc volume of that name");
		return r;
	}
	return genlmsg_reply(msg, info);
}

/* cb->args[0]: how many live volumes were sent already */
static int ssc_nl_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	long idx = 0, skip = cb->args[0];
	struct ssc_c *sc;
	int r = 0;

	mutex_lock(&ssc_volumes_lock);
	list_for_each_entry(sc, &ssc_volumes, vol_node) {
		if (!sc->live)
			continue;
		if (idx++ < skip)
			continue;
		r = ssc_nl_fill(skb, sc, NETLINK_CB(cb->skb).portid,
				cb->nlh->nlmsg_seq, NLM_F_MULTI);
		if (r == -ENODEV) {	/* being removed: leave it out */
			r = 0;
			continue;
		}
		if (r)
			break;
	}
	mutex_unlock(&ssc_volumes_lock);
	if (r) {
		idx--;
		/* an empty skb means one volume does not fit at all */
		if (!skb->len)
			return r;
	}
	cb->args[0] = idx;
	return skb->len;
}

/* Send one event; the payload is a copy taken under ev.lock. */
static void ssc_nl_send_event(struct ssc_c *sc, unsigned int ev,
			      const struct ssc_ev_data *p)
{
	struct sk_buff *skb;
	void *hdr;
	int r;

	skb = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!skb)
		return;
	hdr = genlmsg_put(skb, 0, 0, &ssc_genl_family, 0, DM_SSC_CMD_EVENT);
	if (!hdr)
		goto bad;
	r = ssc_nl_put_volume(skb, sc);
	if (r)
		goto bad;
	if (nla_put_u32(skb, DM_SSC_A_EVENT, ev))
		goto bad;
	switch (ev) {
	case DM_SSC_EVENT_MODE:
		r = nla_put_u32(skb, DM_SSC_A_MODE, sc->mode) ||
			nla_put_u32(skb, DM_SSC_A_OLD_MODE, p->old_mode);
		break;
	case DM_SSC_EVENT_STATE:
		/* a failed engine never recovers: the state now is the one to report */
		r = nla_put_u32(skb, DM_SSC_A_STATE, ssc_state(sc)) ||
			nla_put_u32(skb, DM_SSC_A_ERROR, -ssc_engine_error(sc->eng));
		break;
	case DM_SSC_EVENT_GC_STALL:
		r = ssc_nl_put_u64(skb, DM_SSC_A_COUNT, p->stalls) ||
			ssc_nl_put_u64(skb, DM_SSC_A_MAX_WAIT_US,
				       div_u64(p->stall_max_ns, NSEC_PER_USEC)) ||
			ssc_nl_put_u64(skb, DM_SSC_A_DURATION_US,
				       div_u64(p->stall_total_ns, NSEC_PER_USEC)) ||
			ssc_nl_put_u64(skb, DM_SSC_A_BYPASSED, p->stall_bypassed);
		break;
	case DM_SSC_EVENT_WRITEBACK_DONE:
		r = ssc_nl_put_u64(skb, DM_SSC_A_BLOCKS, p->wb_blocks) ||
			ssc_nl_put_u64(skb, DM_SSC_A_DURATION_US, p->wb_us);
		break;
	case DM_SSC_EVENT_RECOVERY:
		r = ssc_nl_put_u64(skb, DM_SSC_A_DURATION_US, p->rec_us) ||
			ssc_nl_put_u64(skb, DM_SSC_A_REPLAYED, p->rec_replayed) ||
			ssc_nl_put_u64(skb, DM_SSC_A_CACHED, p->rec_cached) ||
			ssc_nl_put_u64(skb, DM_SSC_A_DIRTY, p->rec_dirty);
		break;
	}
	if (r)
		goto bad;
	genlmsg_end(skb, hdr);
	/* -ESRCH: nobody listens, which is fine */
	genlmsg_multicast(&ssc_genl_family, skb, 0, SSC_MCGRP_EVENTS, GFP_KERNEL);
	return;
bad:
	nlmsg_free(skb);
}

void ssc_event_worker(struct work_struct *work)
{
	struct ssc_c *sc = container_of(to_delayed_work(work), struct ssc_c,
					ev.work);
	struct ssc_ev_data p;
	unsigned long delay = 0;
	unsigned int ev;

	spin_lock_irq(&sc->ev.lock);
	p = sc->ev.d;
	sc->ev.d.pending = 0;
	if (p.pending & BIT(DM_SSC_EVENT_GC_STALL)) {
		/* stalls are coalesced: one event per interval at most */
		if (sc->ev.last_stall &&
		    time_before(jiffies, sc->ev.last_stall + SSC_STALL_EVENT_INTERVAL)) {
			delay = sc->ev.last_stall + SSC_STALL_EVENT_INTERVAL - jiffies;
			sc->ev.d.pending = BIT(DM_SSC_EVENT_GC_STALL);
			p.pending &= ~BIT(DM_SSC_EVENT_GC_STALL);
		} else {
			sc->ev.last_stall = jiffies;
			sc->ev.d.stalls = 0;
			sc->ev.d.stall_max_ns = 0;
			sc->ev.d.stall_total_ns = 0;
			sc->ev.d.stall_bypassed = 0;
		}
	}
	spin_unlock_irq(&sc->ev.lock);

	for (ev = 1; ev <= DM_SSC_EVENT_MAX; ev++)
		if (p.pending & BIT(ev))
			ssc_nl_send_event(sc, ev, &p);
	if (delay)
		queue_delayed_work(system_wq, &sc->ev.work, delay);
}

/* Queue an event whose payload is in sc->ev already. Any context. */
void ssc_event(struct ssc_c *sc, unsigned int ev)
{
	unsigned long flags;

	spin_lock_irqsave(&sc->ev.lock, flags);
	sc->ev.d.pending |= BIT(ev);
	spin_unlock_irqrestore(&sc->ev.lock, flags);
	mod_delayed_work(system_wq, &sc->ev.work, 0);
}

/* The engine's reports: failure and stalls. Any context, must not sleep. */
void ssc_engine_event(void *priv, enum ssc_engine_event ev, u64 a, u64 b)
{
	struct ssc_c *sc = priv;
	unsigned long flags;

	spin_lock_irqsave(&sc->ev.lock, flags);
	switch (ev) {
	case SSC_ENG_FAILED:
		sc->ev.d.pending |= BIT(DM_SSC_EVENT_STATE);
		break;
	case SSC_ENG_STALL:
		sc->ev.d.stalls++;
		sc->ev.d.stall_total_ns += a;
		sc->ev.d.stall_max_ns = max(sc->ev.d.stall_max_ns, a);
		sc->ev.d.stall_bypassed += b;
		sc->ev.d.pending |= BIT(DM_SSC_EVENT_GC_STALL);
		break;
	}
	spin_unlock_irqrestore(&sc->ev.lock, flags);
	/* a pending (delayed) GC_STALL send is not pulled forward */
	queue_delayed_work(system_wq, &sc->ev.work, 0);
}

/*
 * First resume of a table that replaced another on the same device: say
 * when the mode changed, or when a failed cache is back.
 */
void ssc_note_reload(struct ssc_c *sc)
{
	struct ssc_c *old;
	bool mode = false, ok = false;

	if (sc->live)
		return;
	mutex_lock(&ssc_volumes_lock);
	list_for_each_entry(old, &ssc_volumes, vol_node) {
		if (old == sc || old->md != sc->md || !old->live)
			continue;
		spin_lock_irq(&sc->ev.lock);
		if (old->mode != sc->mode) {
			sc->ev.d.old_mode = old->mode;
			mode = true;
		}
		spin_unlock_irq(&sc->ev.lock);
		ok = ssc_engine_error(old->eng) && !ssc_engine_error(sc->eng);
	}
	sc->live = true;
	mutex_unlock(&ssc_volumes_lock);
	if (mode)
		ssc_event(sc, DM_SSC_EVENT_MODE);
	if (ok)
		ssc_event(sc, DM_SSC_EVENT_STATE);
}
